package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/leakyns"
)

func TestMain(m *testing.M) {
	leakyns.Main()  // returns unless this process is a helper
	cellguardMain() // likewise
	os.Exit(m.Run())
}

// Comms a tenant's process gives itself (prctl PR_SET_NAME, 15 bytes at
// most): an OSC window title then a clear-screen, and a newline that
// starts a line fleet-summary read as a failing check "x" with 9 findings.
const (
	oscComm    = "\x1b]0;pwn\x07\x1b[2J"
	forgedComm = "\nFAIL x info 9 "
)

// hostileCell is the fixture cell with pid 101, escaped, named comm as
// the kernel stores it for a real thread that named itself so.
func hostileCell(t *testing.T, comm string) *fakehost.Host {
	t.Helper()
	h := cell(t)
	p := h.Get(101)
	p.Comm = testkit.KernelComm(t, comm)
	if p.Comm != comm {
		t.Fatalf("the kernel keeps comm %q for %q", p.Comm, comm)
	}
	h.Update(p)
	escape(h)
	return h
}

// noRawControls fails for a line holding a byte a terminal acts on (C0
// but the newline, DEL) or one a tenant started.
func noRawControls(t *testing.T, what, s string) {
	t.Helper()
	for i, line := range strings.Split(s, "\n") {
		if strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("%s line %d holds a raw control: %q", what, i+1, line)
		}
		if strings.HasPrefix(line, "FAIL x") {
			t.Errorf("%s line %d is forged by a tenant: %q", what, i+1, line)
		}
	}
}

// The human report on stdout and what bin/drain appends to drain.log
// (drain's stderr: the report and the decision; --log-file: lager JSON)
// show a tenant's comm escaped, never raw.
func TestTenantCommReachesOperatorsEscaped(t *testing.T) {
	for _, comm := range []string{oscComm, forgedComm} {
		h := hostileCell(t, comm)
		code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start")
		if code != ExitFailed {
			t.Fatalf("exit %d\n%s%s", code, out, errOut)
		}
		noRawControls(t, "validate's report", out)
		d := newDrainHost(t, h.Root, `{}`)
		code, _, drainErr := d.drain(t, jobChanged...)
		if code != ExitFailed {
			t.Fatalf("drain: exit %d\n%s", code, drainErr)
		}
		noRawControls(t, "drain.log (drain's stderr)", drainErr)
		noRawControls(t, "drain.log (lager)", d.read(t, d.log))
		mustContainAll(t, "validate's report", out, "pid 101 ("+visible(comm)+") escaped")
	}
}

// visible is comm as report.Escape shows it.
func visible(comm string) string {
	return strings.NewReplacer("\x1b", `\x1b`, "\x07", `\x07`, "\n", `\n`).Replace(comm)
}

// End to end on the real kernel: a process started here names itself
// (/proc/self/comm) and leaves a network namespace held only by a socket
// (seed 003); leaked-netns, with its probe allowed (validator.netns_probe:
// a socket's namespace is asked only then), names it, on the live root, in
// validate's human report and in what drain writes to drain.log, escaped.
func TestRealProcessCommReachesOperatorsEscaped(t *testing.T) {
	testkit.RequireRoot(t, "a new network namespace and leaked-netns on the live root")
	for _, comm := range []string{oscComm, forgedComm} {
		h := leakyns.StartNamed(t, leakyns.Socket, 0, comm)
		holder := fmt.Sprintf("pid %d (%s) fd %d (socket)", h.PID, visible(comm), h.FD)
		probe := `{"validator":{"netns_probe":true}}`
		_, out, errOut := runValidateCLI(t, "/", probe, "--phase", "pre-start")
		mustContainAll(t, "validate's report", out+errOut, holder)
		noRawControls(t, "validate's report", out)
		d := newDrainHost(t, "/", probe)
		_, _, drainErr := d.drain(t, jobChanged...)
		mustContainAll(t, "drain.log (drain's stderr)", drainErr, holder)
		noRawControls(t, "drain.log (drain's stderr)", drainErr)
		noRawControls(t, "drain.log (lager)", d.read(t, d.log))
	}
}

// boshJSON is `bosh --json run-errand` for one cell whose errand printed
// stdout.
func boshJSON(t *testing.T, code int, stdout string) []byte {
	t.Helper()
	row := map[string]string{"instance": "cell/0b7c2a4e-5a51-4f1e-9d53-7d1f64a4c001", "exit_code": string(rune('0' + code)), "stdout": stdout, "stderr": ""}
	b, err := json.Marshal(map[string]any{"Tables": []map[string]any{{"Content": "errand(s)", "Rows": []map[string]string{row}}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A comm with a newline put a column-0 line into the human report, which
// fleet-summary read as a failing check "x" with 9 findings. Whatever the
// errand printed, fleet-summary counts only what validate's JSON report
// says: one check, cgroup-integrity, with its own findings.
func TestFleetSummaryReadsNoForgedCheck(t *testing.T) {
	h := hostileCell(t, forgedComm)
	for _, format := range []string{"human", "json"} {
		code, out, errOut := runValidateCLI(t, h.Root, `{}`, "--phase", "pre-start", "--format", format)
		if code != ExitFailed {
			t.Fatalf("%s: exit %d\n%s%s", format, code, out, errOut)
		}
		_, sum, sumErr := runFleetSummaryCLI(t, boshJSON(t, code, out))
		t.Logf("--format %s: fleet-summary:\n%s%s", format, sum, sumErr)
		if strings.Contains(sum, "x 9") || strings.Contains(sum, "\nx (") {
			t.Errorf("--format %s: fleet-summary counts a check a tenant forged:\n%s", format, sum)
		}
	}
}
