package unitfile

import (
	"strings"
	"testing"
)

// directives is every key Render may write; anything else in the output is
// an injected directive.
var directives = map[string]bool{
	"Description": true, "Type": true, "PIDFile": true, "ExecStart": true, "ExecStop": true, "Restart": true,
	"Delegate": true, "KillMode": true, "TasksMax": true, "TimeoutStartSec": true, "TimeoutStopSec": true,
}

// mainPIDLine is the one line allowed to hold '$': systemd expands $MAINPID
// itself, and cellguard writes it, never the operator.
const mainPIDLine = "ExecStop=/bin/kill -TERM $MAINPID"

// checkUnitText is the injection property of a rendered unit or drop-in:
// only known directives, each once, nothing systemd would expand or
// unescape (%, $, \, quotes), no control characters, nothing but ASCII.
func checkUnitText(t *testing.T, text string, allowed map[string]bool) map[string]string {
	t.Helper()
	seen := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		for _, r := range line {
			if r < 0x20 || r > 0x7e {
				t.Fatalf("line %q holds %q:\n%s", line, r, text)
			}
		}
		switch {
		case line == "", line == "[Unit]", line == "[Service]":
			continue
		case strings.HasPrefix(line, "#"):
			if strings.HasSuffix(line, "\\") {
				t.Fatalf("comment %q ends in a backslash (line continuation):\n%s", line, text)
			}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || !allowed[key] {
			t.Fatalf("line %q is not a known directive:\n%s", line, text)
		}
		if _, dup := seen[key]; dup {
			t.Fatalf("directive %s set twice:\n%s", key, text)
		}
		seen[key] = value
		if strings.ContainsAny(value, "%\\'\"`;") {
			t.Fatalf("line %q holds a specifier, escape, quote or separator:\n%s", line, text)
		}
		if strings.Contains(value, "$") && line != mainPIDLine {
			t.Fatalf("line %q holds '$':\n%s", line, text)
		}
	}
	return seen
}

// FuzzRender: whatever Render accepts (names, commands and pidfiles from
// the job config, split by SplitCommand as the CLI does, or handed over
// as word lists) must produce a unit with no injected directive, and the
// command systemd runs must be the words cellguard was given.
func FuzzRender(f *testing.F) {
	g := goodSpec()
	f.Add(g.Name, strings.Join(g.Start, " "), strings.Join(g.Stop, " "), g.PIDFile, false, false, 30, 45)
	for _, bad := range append(append([]string(nil), injection...), badExecutable...) {
		f.Add("garden", bad, "", "", true, false, 0, 0)
		f.Add(bad, "/bin/true", bad, bad, false, true, -1, 0)
	}
	f.Add("garden", "/bin/true a=b,c:d+e@f", "/bin/kill -TERM", "/run/x.pid", true, true, 0, 1)
	f.Fuzz(func(t *testing.T, name, start, stop, pidfile string, forking, v2 bool, tStart, tStop int) {
		words := func(cmd string) [][]string {
			out := [][]string{strings.Split(cmd, " "), {cmd}}
			if w, err := SplitCommand(cmd); err == nil {
				out = append(out, w)
				if strings.Join(w, " ") != strings.Join(strings.Fields(cmd), " ") {
					t.Fatalf("SplitCommand(%q) = %q: not the space-separated words", cmd, w)
				}
			}
			return out
		}
		var stops [][]string
		if stop == "" {
			stops = [][]string{nil}
		} else {
			stops = words(stop)
		}
		for _, startWords := range words(start) {
			for _, stopWords := range stops {
				s := Spec{Name: name, Start: startWords, Stop: stopWords, PIDFile: pidfile, Type: TypeExec,
					Delegate: DelegateV1, KillMode: KillModeNone, TimeoutStartSec: tStart, TimeoutStopSec: tStop}
				if forking {
					s.Type = TypeForking
				}
				if v2 {
					s.Delegate, s.KillMode = DelegateV2, KillModeProcess
				}
				b, err := Render(s)
				if err != nil {
					continue
				}
				seen := checkUnitText(t, string(b), directives)
				if seen["ExecStart"] != strings.Join(startWords, " ") {
					t.Fatalf("ExecStart=%q, want the words %q", seen["ExecStart"], startWords)
				}
				if w, err := SplitCommand(seen["ExecStart"]); err != nil || strings.Join(w, "\x00") != strings.Join(startWords, "\x00") {
					t.Fatalf("ExecStart=%q splits to %q (%v), want %q", seen["ExecStart"], w, err, startWords)
				}
				if got := seen["Description"]; !strings.HasPrefix(got, name+",") {
					t.Fatalf("Description=%q does not start with the name %q", got, name)
				}
			}
		}
	})
}

// FuzzRenderSupervisorDropIn: the supervisor's unit name comes from
// systemd (GetUnitNameByPID) or a flag.
func FuzzRenderSupervisorDropIn(f *testing.F) {
	for _, s := range []string{"runit.service", "monit.service", "session-1.scope", "runit.service\n[Service]",
		"a\\.service", "x@y.service", "%n.service", "$X.service", "a b.service"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, name string, v2 bool) {
		delegate := DelegateV1
		if v2 {
			delegate = DelegateV2
		}
		b, err := RenderSupervisorDropIn(name, delegate)
		if err != nil {
			return
		}
		seen := checkUnitText(t, string(b), map[string]bool{"Delegate": true, "TasksMax": true})
		if seen["Delegate"] != delegate || seen["TasksMax"] != "infinity" {
			t.Fatalf("drop-in for %q sets %v", name, seen)
		}
	})
}
