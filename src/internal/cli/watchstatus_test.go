package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// "Does watch still run" has one answer, for watch_ctl (through watch
// status) and uninstall alike: the pidfile's pid runs cellguard watch.
func TestWatchStatus(t *testing.T) {
	const pidfile = "/var/vcap/sys/run/cellguard/watch.pid"
	testCases := []struct {
		name, pidfile, cmdline string
		wantCode               int
		want                   string // stdout when it runs, else in stderr
	}{
		{"watch as watch_ctl starts it", "4242\n", "/var/vcap/packages/cellguard/bin/cellguard\x00watch\x00--config\x00x\x00", ExitOK, "4242\n"},
		{"a script in the binary's place", "4242", "bash\x00/var/vcap/packages/cellguard/bin/cellguard\x00watch\x00", ExitOK, "4242\n"},
		{"still starting: setsid, then env and the interpreter", "4242", "setsid\x00/usr/bin/env\x00bash\x00/var/vcap/packages/cellguard/bin/cellguard\x00watch\x00", ExitOK, "4242\n"},
		{"no pidfile", "", "", ExitFailed, "no pidfile"},
		{"not a pid", "garbage\n", "", ExitFailed, `holds "garbage", not a pid`},
		{"pid gone", "4242\n", "", ExitFailed, "pid 4242 from " + pidfile + " is gone"},
		{"zombie", "4242\n", "\x00", ExitFailed, "is gone"},
		{"pid reused by another program", "4242\n", "/bin/sleep\x00300\x00", ExitFailed, `runs "/bin/sleep 300", not cellguard watch`},
		{"a name that only reads like it", "4242\n", "cellguard watch\x00300\x00", ExitFailed, "not cellguard watch"},
		{"an argument that only reads like it", "4242\n", "grep\x00cellguard\x00watch\x00", ExitFailed, "not cellguard watch"},
		{"this question itself", "4242\n", "/var/vcap/packages/cellguard/bin/cellguard\x00watch\x00status\x00", ExitFailed, "not cellguard watch"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.pidfile != "" {
				writeFile(t, filepath.Join(root, pidfile), tc.pidfile)
			}
			if tc.cmdline != "" {
				writeFile(t, filepath.Join(root, "proc/4242/cmdline"), strings.TrimPrefix(tc.cmdline, "\x00"))
			}
			d := newDrainHost(t, root, `{}`)
			code, out, errOut := d.run(t, "watch", "status", "--root", root, "--pidfile", pidfile)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout %q\nstderr %s", code, tc.wantCode, out, errOut)
			}
			if tc.wantCode == ExitOK && out != tc.want || tc.wantCode != ExitOK && (out != "" || !strings.Contains(errOut, tc.want)) {
				t.Fatalf("stdout %q, stderr %q; want %q", out, errOut, tc.want)
			}
			// uninstall asks the same function, and keeps watch's files
			// exactly when watch status says watch runs.
			var inUse bool
			for _, it := range inventory(&config.Config{}, "", defaultLiftFile) {
				if it.Path == metricTargetsFile {
					_, inUse = it.InUse(root)
				}
			}
			if inUse != (code == ExitOK) {
				t.Errorf("uninstall: in use %t, watch status: exit %d", inUse, code)
			}
		})
	}
}
