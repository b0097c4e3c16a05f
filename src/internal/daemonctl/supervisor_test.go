package daemonctl

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"code.cloudfoundry.org/lager/v3/lagertest"
)

// TestFindSupervisor: protect-supervisor's default finds monit by its
// command name, the oldest such process, under either name a BOSH stemcell
// gives it (monit-actual behind the jammy stemcell's wrapper).
func TestFindSupervisor(t *testing.T) {
	root := t.TempDir()
	proc := func(pid int, comm string, start int) {
		t.Helper()
		// Fields 3..23 of /proc/PID/stat; starttime is the 22nd.
		fields := []string{"S", "1", "1", "1", "0", "-1", "0", "0", "0", "0", "0", "0", "0", "0", "0", "20", "0", "1", "0", fmt.Sprint(start), "0"}
		dir := filepath.Join(root, "proc", fmt.Sprint(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf("%d (%s) %s\n", pid, comm, strings.Join(fields, " "))
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proc(10, "bash", 100)
	proc(20, "monit-actual", 500)
	proc(30, "monit", 900)
	proc(40, "monit-actual", 950)
	m := &Manager{Logger: lagertest.NewTestLogger("find"), Root: root}
	for _, tc := range []struct {
		names string
		want  int
	}{
		{"monit,monit-actual", 20}, // the CLI's default: the oldest of either name
		{"monit", 30},
		{"monit-actual", 20},
		{"sshd", 0},
	} {
		got, err := m.findProcess(tc.names)
		if tc.want == 0 {
			if err == nil || !strings.Contains(err.Error(), "pass --pid") {
				t.Errorf("findProcess(%q) = %d, %v; want an error that says to pass --pid", tc.names, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("findProcess(%q) = %d, %v; want %d", tc.names, got, err, tc.want)
		}
	}
}
