package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// config check names every problem of the file, each exactly once, each
// by its key: one run shows the operator everything to fix.
func TestConfigCheckPrintsEachProblemOnce(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, cfg, `{"daemons":[{"name":"garden"}],
	  "log":{"level":"verbose"},
	  "sysctl":{"profile":"k8s"},
	  "validator":{"ignore":["ghosts"],"budget":"60"},
	  "watch":{"listen":"0.0.0.0:14875"},
	  "drain":{"budget":"0s"}}`)
	code, out, errOut := runCLI(t, "config", "check", "--config", cfg, "--root", t.TempDir())
	if code != ExitCantRun {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, ExitCantRun, out, errOut)
	}
	keys := []string{"daemons[0].start", "log.level", "sysctl.profile", "validator.ignore", "validator.budget", "watch.listen", "drain.budget"}
	var errLines []string
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if strings.HasPrefix(l, "cellguard: error: ") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != len(keys) {
		t.Errorf("%d error lines, want one per problem (%d):\n%s", len(errLines), len(keys), errOut)
	}
	for _, k := range keys {
		if n := strings.Count(errOut, "config "+cfg+": "+k+" ") + strings.Count(errOut, "config "+cfg+": "+k+": "); n != 1 {
			t.Errorf("%s named %d times, want once:\n%s", k, n, errOut)
		}
	}
	// Each names the job property an operator sets, and what is accepted.
	for _, want := range []string{
		`drain.budget "0s": must be from 1s to 1h; leave it out for the default (job property cellguard.drain.budget)`,
		`watch.listen "0.0.0.0:14875": `,
		`(job property cellguard.watch.listen)`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// drain.budget "0s" is refused by the config every subcommand loads, not
// only by pre-start's config check: validate stops before reading the
// host, and drain timeout gives bin/drain no limit to use.
func TestEverySubcommandRefusesAZeroDrainBudget(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "cellguard.json")
	writeFile(t, cfg, `{"drain":{"budget":"0s"}}`)
	for _, args := range [][]string{
		{"validate", "--phase", "pre-start", "--config", cfg, "--root", filepath.Join(dir, "empty-root"), "--log-file", filepath.Join(dir, "log")},
		{"validate", "--phase", "drain", "--config", cfg, "--root", filepath.Join(dir, "empty-root"), "--log-file", filepath.Join(dir, "log")},
		{"drain", "timeout", "--config", cfg},
		{"validate", "timeout", "--config", cfg},
	} {
		code, out, errOut := runCLI(t, args...)
		if code != ExitCantRun || !strings.Contains(errOut, `drain.budget "0s": must be from 1s to 1h`) || strings.Contains(errOut, "/proc") {
			t.Errorf("%s: exit %d, want %d refusing drain.budget before reading the host\nstdout: %s\nstderr: %s",
				strings.Join(args[:2], " "), code, ExitCantRun, out, errOut)
		}
	}
}

// sysctl check says each error once: the log is a second copy only where
// it is a file (on the VM, the job's log.file), not on the stderr the
// error line is already on.
func TestSysctlCheckPrintsEachErrorOnce(t *testing.T) {
	root := sysctlRoot(t)
	for name, args := range map[string][]string{
		"bad profile": {"sysctl", "check", "--root", root, "--profile", "k8s"},
		"bad floor":   {"sysctl", "check", "--root", root, "--set", "kernel.pid_max>=lots"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := runSysctlCLI(t, args...)
			if code != ExitCantRun {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitCantRun, out, errOut)
			}
			want := map[string]string{"bad profile": `unknown sysctl profile`, "bad floor": `is not a decimal number`}[name]
			if n := strings.Count(errOut, want); n != 1 {
				t.Errorf("%q printed %d times, want once:\n%s", want, n, errOut)
			}
			// With a log file the log keeps its copy.
			log := filepath.Join(t.TempDir(), "log")
			_, _, errOut = runSysctlCLI(t, append(args, "--log-file", log)...)
			logged := readFile(t, log)
			if strings.Count(errOut, want) != 1 || !strings.Contains(logged, "resolve-profile") {
				t.Errorf("with --log-file: stderr %q, log %q; want the error once in each", errOut, logged)
			}
		})
	}
}
