package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// bin/drain's fallback: the could-not-run textfile, written by cellguard's
// atomic write for the agent's event, never through what another user
// planted in the textfile's directory.
func TestDrainCouldNotRunWritesTheTextfile(t *testing.T) {
	d := newDrainHost(t, t.TempDir(), `{}`)
	for _, tc := range []struct {
		args  []string
		event string
	}{
		{[]string{"job_changed", "hash_changed", "cellguard"}, "update"},
		{[]string{"job_shutdown", "hash_unchanged"}, "shutdown"},
	} {
		code, out, errOut := d.run(t, append([]string{"drain", "could-not-run", "--log-file", d.log,
			"--prometheus-textfile", d.prom, "--why", "cellguard drain ended with exit 139", "--"}, tc.args...)...)
		if code != ExitOK || out != "" {
			t.Fatalf("exit %d, stdout %q (the integer is bin/drain's), stderr:\n%s", code, out, errOut)
		}
		mustContainAll(t, "textfile", d.read(t, d.prom),
			`cellguard_drain_could_not_run{event="`+tc.event+`"} 1`,
			`cellguard_drain_outcome{event="`+tc.event+`",outcome="could_not_run"} 1`,
			`cellguard_drain_outcome{event="`+tc.event+`",outcome="pass"} 0`,
			`cellguard_drain_timestamp_seconds{event="`+tc.event+`"} `)
		mustContainAll(t, "log", d.read(t, d.log), "could-not-run-recorded", "cellguard drain ended with exit 139")
		if fi, err := os.Stat(d.prom); err != nil || fi.Mode().Perm() != 0o644 {
			t.Fatalf("textfile mode: %v %v", fi, err)
		}
	}
}

// What the old bash fallback fell for (issue 23): a link at the temp name
// bin/drain used, and a link at the textfile itself. Neither target is
// written, truncated or chmodded.
func TestDrainCouldNotRunFollowsNoPlantedLink(t *testing.T) {
	d := newDrainHost(t, t.TempDir(), `{}`)
	dir := filepath.Dir(d.prom)
	victim := filepath.Join(t.TempDir(), "root-only")
	writeFile(t, victim, "root's secret\n")
	if err := os.Chmod(victim, 0o600); err != nil {
		t.Fatal(err)
	}
	for pid := 1; pid < 200; pid++ { // every name the old script could pick, and then some
		if err := os.Symlink(victim, filepath.Join(dir, "."+filepath.Base(d.prom)+".tmp-"+strconv.Itoa(pid))); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"drain", "could-not-run", "--log-file", d.log, "--prometheus-textfile", d.prom, "--", "job_changed", "hash_changed"}
	if code, _, errOut := d.run(t, args...); code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, errOut)
	}
	if fi, err := os.Lstat(d.prom); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("textfile is not a regular file: %v %v", fi, err)
	}
	// A link at the textfile: refused, and said.
	if err := os.Remove(d.prom); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, d.prom); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := d.run(t, args...)
	if code != ExitFailed || !strings.Contains(errOut, "refusing to replace a symlink") {
		t.Fatalf("a link at the textfile: exit %d, want %d and the refusal:\n%s", code, ExitFailed, errOut)
	}
	fi, err := os.Stat(victim)
	if err != nil || fi.Mode().Perm() != 0o600 || d.read(t, victim) != "root's secret\n" {
		t.Fatalf("the link's target changed: %v %v %q", fi, err, d.read(t, victim))
	}
}

func TestDrainCouldNotRunRefusesAPathThatIsNotPlain(t *testing.T) {
	d := newDrainHost(t, t.TempDir(), `{}`)
	for _, p := range []string{"", "cellguard.prom", filepath.Dir(d.prom) + "/../x.prom", "/tmp/x\n.prom"} {
		code, _, errOut := d.run(t, "drain", "could-not-run", "--prometheus-textfile", p, "--", "job_changed")
		if code != ExitCantRun || !strings.Contains(errOut, "--prometheus-textfile: unit: invalid path") {
			t.Errorf("%q: exit %d, want %d and the path named:\n%s", p, code, ExitCantRun, errOut)
		}
	}
}
