package fleetsummary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Instance is one instance's errand result as bosh-cli printed it.
type Instance struct {
	Name     string `json:"instance"` // group/id
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"-"`
	Stderr   string `json:"-"`
}

// ErrNoErrandTable means the input holds no run-errand result table.
var ErrNoErrandTable = errors.New("no bosh run-errand result table")

// ansiRE matches the color codes bosh-cli writes to a terminal.
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// ParseErrand reads bosh-cli's run-errand output in any of its three
// forms. Lines before the table (the environment, the task's events) and
// after it (the error, "Exit code 1") are skipped.
func ParseErrand(b []byte) ([]Instance, error) {
	b = ansiRE.ReplaceAll(b, nil)
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return parseJSON(t)
	}
	lines := strings.Split(strings.ReplaceAll(string(b), "\r", ""), "\n")
	for i, l := range lines {
		if m := labelRE.FindStringSubmatch(l); m != nil && m[1] == "Instance" {
			return parseLabelled(lines[i:], len(m[0]))
		}
		if dataStart(lines, i) {
			return parseDataOnly(lines[i:])
		}
	}
	return nil, ErrNoErrandTable
}

// parseJSON reads `bosh --json run-errand`: ui/json_ui.go's document, whose
// errand table (cmd/run_errand.go) has the keys instance, exit_code,
// stdout and stderr.
func parseJSON(b []byte) ([]Instance, error) {
	var doc struct {
		Tables []struct {
			Content string
			Rows    []map[string]string
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("parse bosh --json output: %w", err)
	}
	for _, t := range doc.Tables {
		if t.Content != "errand(s)" {
			continue
		}
		var out []Instance
		for _, r := range t.Rows {
			code, err := strconv.Atoi(r["exit_code"])
			if err != nil {
				return nil, fmt.Errorf("parse exit code of %s: %w", r["instance"], err)
			}
			out = append(out, Instance{Name: r["instance"], ExitCode: code, Stdout: r["stdout"], Stderr: r["stderr"]})
		}
		return out, nil
	}
	return nil, ErrNoErrandTable
}

// labelRE is a row of the transposed table in a terminal: the column
// title, padded to the widest ("Exit Code") plus the border (table.Writer).
var labelRE = regexp.MustCompile(`^(Instance|Exit Code|Stdout|Stderr) +`)

// parseLabelled reads the terminal form: "Instance   cell/ID  ", "Exit
// Code  1  ", then each stream's lines, the first after its title and the
// rest indented to the value column; an empty line separates instances.
// Every line ends with the two-space border; an empty value is "-".
func parseLabelled(lines []string, col int) ([]Instance, error) {
	var out []Instance
	var field *string
	var cur *Instance
	var exit string
	flush := func() error {
		if cur == nil {
			return nil
		}
		code, err := strconv.Atoi(exit)
		if err != nil {
			return fmt.Errorf("parse exit code of %s: %w", cur.Name, err)
		}
		cur.ExitCode = code
		cur.Stdout, cur.Stderr = unDash(cur.Stdout), unDash(cur.Stderr)
		out = append(out, *cur)
		cur, field = nil, nil
		return nil
	}
	for _, l := range lines {
		value := strings.TrimSuffix(l, "  ")
		switch m := labelRE.FindStringSubmatch(l); {
		case m != nil && len(m[0]) == col:
			v := value[col:]
			switch m[1] {
			case "Instance":
				if err := flush(); err != nil {
					return nil, err
				}
				cur = &Instance{Name: v}
				field = nil
			case "Exit Code":
				exit, field = v, &exit
			case "Stdout":
				cur.Stdout, field = v, &cur.Stdout
			case "Stderr":
				cur.Stderr, field = v, &cur.Stderr
			}
		case cur != nil && field != nil && strings.HasPrefix(l, strings.Repeat(" ", col)):
			*field += "\n" + value[col:]
		case l == "" && cur != nil:
			if err := flush(); err != nil {
				return nil, err
			}
		default:
			// The table ended: its footer, the error, "Exit code 1".
			if err := flush(); err != nil {
				return nil, err
			}
			if len(out) > 0 {
				return out, nil
			}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return out, nil
}

func unDash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// slugRE is an instance in the data-only table: group/uuid, then the
// tab bosh-cli's non-TTY UI uses as the border (ui/non_tty_ui.go).
var (
	slugRE = regexp.MustCompile(`^([A-Za-z0-9_.-]+/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\t$`)
	codeRE = regexp.MustCompile(`^(-?[0-9]+)\t$`)
)

func dataStart(lines []string, i int) bool {
	return slugRE.MatchString(lines[i]) && i+1 < len(lines) && codeRE.MatchString(lines[i+1])
}

// stderrStart is the errand's first line on stderr (jobs/cellguard-validate
// bin/run): in a pipe bosh-cli prints values without titles, so it is
// where stdout ends.
var stderrStart = regexp.MustCompile(`^cellguard-validate(:| on )`)

// parseDataOnly reads the pipe form: each value's lines with a trailing tab
// and no titles, instance, exit code, stdout then stderr; an empty line
// (no tab) separates instances.
func parseDataOnly(lines []string) ([]Instance, error) {
	var out []Instance
	for i := 0; i < len(lines); {
		if !dataStart(lines, i) {
			break
		}
		in := Instance{Name: slugRE.FindStringSubmatch(lines[i])[1]}
		in.ExitCode, _ = strconv.Atoi(codeRE.FindStringSubmatch(lines[i+1])[1])
		var stdout, stderr []string
		inStderr := false
		for i += 2; i < len(lines) && strings.HasSuffix(lines[i], "\t"); i++ {
			v := strings.TrimSuffix(lines[i], "\t")
			if !inStderr && stderrStart.MatchString(v) {
				inStderr = true
			}
			if inStderr {
				stderr = append(stderr, v)
			} else {
				stdout = append(stdout, v)
			}
		}
		if !inStderr && len(stdout) > 1 && stdout[len(stdout)-1] == "-" {
			// An empty stderr, printed as "-", after stdout.
			stdout = stdout[:len(stdout)-1]
		}
		in.Stdout, in.Stderr = unDash(strings.Join(stdout, "\n")), unDash(strings.Join(stderr, "\n"))
		out = append(out, in)
		for i < len(lines) && lines[i] == "" {
			i++
		}
	}
	return out, nil
}
