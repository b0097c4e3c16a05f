package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// hostile are strings a tenant controls (a comm, argv, a cgroup path): an
// OSC window title and a clear-screen, a forged column-0 report line, a
// tab, DEL, a C1 CSI, a bidi override and invalid UTF-8.
var hostile = []string{
	"\x1b]0;pwn\x07\x1b[2J",
	"\nFAIL x info 9 ",
	"a\tb\x7fc\u009b2Jd\u202eevil\xff",
}

// Nothing a tenant wrote reaches the operator's terminal as a control:
// the human report has no byte below 0x20 but its own newlines, no DEL,
// C1 or bidi control, no invalid UTF-8, and no line a tenant started.
func TestHumanEscapesTenantStrings(t *testing.T) {
	rep := validator.Report{Phase: validator.Drain, Blocked: true}
	r := validator.Result{ID: "cgroup-integrity", Title: "t", Severity: validator.Blocking, Status: validator.Fail, Blocking: true}
	for _, s := range hostile {
		r.Findings = append(r.Findings, validator.Finding{Subject: "c" + s, Status: validator.Fail, Detail: "pid 101 (" + s + ") escaped in /garden/" + s})
	}
	r.Error = "read /proc/101/cgroup" + hostile[1]
	rep.Results = []validator.Result{r}
	var b bytes.Buffer
	if err := Human(&b, rep); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	t.Logf("human report:\n%s", out)
	for i, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "FAIL x") {
			t.Errorf("line %d is forged by a tenant: %q", i+1, line)
		}
		if bad := strings.IndexFunc(line, func(r rune) bool { return unsafeForTerminal(r) }); bad >= 0 {
			t.Errorf("line %d has a raw control at %d: %q", i+1, bad, line)
		}
	}
	for _, want := range []string{`pid 101 (\x1b]0;pwn\x07\x1b[2J) escaped`, `(\nFAIL x info 9 )`, `a\tb\x7fc\u009b2Jd\u202eevil\xff`} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks the visible form %s", want)
		}
	}
}

// unsafeForTerminal: what a terminal or a line reader acts on.
func unsafeForTerminal(r rune) bool {
	return r < 0x20 && r != '\n' || r >= 0x7f && r <= 0x9f || r == 0x2028 || r == 0x2029 ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0xfffd
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "",
		"garden-init":               "garden-init",
		"/system.slice/a\\x2db":     "/system.slice/a\\x2db", // systemd's own escapes kept
		"ünïcødé 名前":                "ünïcødé 名前",
		"\x1b]0;pwn\x07\x1b[2J":     `\x1b]0;pwn\x07\x1b[2J`,
		"a\nb\rc\td\x00":            `a\nb\rc\td\x00`,
		"del\x7f c1\u0085\u009b":    `del\x7f c1\u0085\u009b`,
		"\u202eevil\u2066\u200f":    `\u202eevil\u2066\u200f`,
		"line\u2028para\u2029":      `line\u2028para\u2029`,
		"bad\xff\xfe utf8 \xe2\x82": `bad\xff\xfe utf8 \xe2\x82`,
		"kept \ufffd":               "kept \ufffd",
		"\xffthen\x1b":              `\xffthen\x1b`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// lager writes JSON: encoding/json escapes C0 controls but leaves DEL, C1
// and bidi controls raw; EscapeJSON escapes them and keeps the value.
func TestEscapeJSON(t *testing.T) {
	raw, err := json.Marshal(map[string]string{"comm": "\x1b[2J\n\x7f\u009b\u202eevil é"})
	if err != nil {
		t.Fatal(err)
	}
	got := EscapeJSON(raw)
	if want := `{"comm":"\u001b[2J\n\u007f\u009b\u202eevil é"}`; string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["comm"] != "\x1b[2J\n\x7f\u009b\u202eevil é" {
		t.Fatalf("not the same value: %q, %v", back, err)
	}
	if plain := []byte(`{"a":"b"}`); &EscapeJSON(plain)[0] != &plain[0] {
		t.Error("a clean line is copied")
	}
}
