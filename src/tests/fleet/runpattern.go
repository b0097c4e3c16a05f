package fleet

import (
	"regexp"
	"strings"
	"unicode"
)

// runPattern is go test's -run (or -skip) as the testing package reads it
// (go1.26 src/testing/match.go: splitRegexp, simpleMatch, alternationMatch):
// alternatives split at a top-level '|', each a list of unanchored regexps,
// one per level of a test's name, split at a '/' outside brackets and
// parentheses. The fleet reads it before it brings anything up, so that a
// run of one scenario makes only that scenario's director, releases and
// VMs; TestFleet then checks that go test ran exactly what the plan picked.
type runPattern [][]*regexp.Regexp

// parseRunPattern parses s; "" matches every name.
func parseRunPattern(s string) (runPattern, error) {
	if s == "" {
		return nil, nil
	}
	var p runPattern
	for _, alt := range splitTop(s, '|') {
		var elems []*regexp.Regexp
		for _, e := range splitTop(alt, '/') {
			re, err := regexp.Compile(rewrite(e))
			if err != nil {
				return nil, err
			}
			elems = append(elems, re)
		}
		p = append(p, elems)
	}
	return p, nil
}

// splitTop splits s at sep where sep is outside [...] and (...), as
// splitRegexp does (an unmatched ']' is legal; '\' escapes the next byte).
func splitTop(s string, sep byte) []string {
	var out []string
	cs, cp, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			cs++
		case ']':
			if cs--; cs < 0 {
				cs = 0
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case sep:
			if cs == 0 && cp == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// rewrite is the testing package's: a space in a name or pattern element
// stands for '_'.
func rewrite(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

// match says whether name (its levels: "TestFleet", "jammy",
// "watch_heals") is run by p as -run: some alternative's elements match the
// levels they reach. reach is the most levels a matching alternative names:
// a pattern that names a level picks at that level from everything, make
// cell's as well as make test's (TestFleet's plan).
func (p runPattern) match(name []string) (ok bool, reach int) {
	if len(p) == 0 {
		return true, 0
	}
	for _, alt := range p {
		if matchesLevels(alt, name) {
			ok, reach = true, max(reach, len(alt))
		}
	}
	return ok, reach
}

// skips says whether name is skipped by p as -skip: the first alternative
// that matches decides, and skips only when it names no level beyond
// name's (a partial match skips nothing yet).
func (p runPattern) skips(name []string) bool {
	for _, alt := range p {
		if matchesLevels(alt, name) {
			return len(name) >= len(alt)
		}
	}
	return false
}

func matchesLevels(alt []*regexp.Regexp, name []string) bool {
	for i, n := range name {
		if i >= len(alt) {
			break
		}
		if !alt[i].MatchString(n) {
			return false
		}
	}
	return true
}
