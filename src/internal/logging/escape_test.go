package logging

import (
	"bytes"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3"
)

// A finding's detail names what a tenant named. encoding/json escapes
// C0 controls; DEL, C1 (U+009B is CSI to a terminal) and bidi controls it
// leaves raw, and `tail drain.log` would show them to the operator.
func TestLogsEscapeTenantControls(t *testing.T) {
	var stderr bytes.Buffer
	logger, closer, err := New(Options{}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer closer()
	comm := "\x1b]0;pwn\x07\n\x7f\u009b2J\u202eevil"
	logger.Info("finding", lager.Data{"detail": "pid 101 (" + comm + ") escaped"})
	out := stderr.String()
	if strings.ContainsFunc(strings.TrimSuffix(out, "\n"), func(r rune) bool {
		return r < 0x20 || r >= 0x7f && r <= 0x9f || r >= 0x202a && r <= 0x202e
	}) {
		t.Fatalf("a raw control in the log line: %q", out)
	}
	if got := line(t, stderr.Bytes())["data"].(map[string]any)["detail"]; got != "pid 101 ("+comm+") escaped" {
		t.Fatalf("the value changed: %q", got)
	}
}
