package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// seed001Scenario: seed 001 at the canary, through the director. The cells
// get runc 1.0.0-rc93 (test-release's old-runc job: rc93 itself, built with
// seccomp from the Go module proxy by src/tests/qemu/runc.sh, which
// startFleet copies into its test release) and an addon whose validator
// checks it. The hang's condition is a non-zero fs.pipe-user-pages-soft:
//   - an nspawn box reads the host's (16384, the kernel's default: active),
//     and cellguard cannot write fs.* there (only net.* in nspawn);
//   - a QEMU VM runs the whole profile (0), so its seed cell is an
//     operator's who left the key out: the addon drops it
//     (cellguard.sysctl.remove) and the test's hand puts the kernel's default
//     back over bosh ssh, as a boot without cellguard's file would have it.
//
// runtime-versions then blocks the canary's pre-start: the deploy stops at
// the canary and the other cells are untouched. The remedy: on boxes runc
// upgraded to 1.0.0-rc94 (test-release's new-runc job, rc94 itself, built
// as rc93 is, in place of old-runc), which the addon then names (and, but
// on xenial, judges); on VMs the profile whole again, which defuses the
// hazard (pre-start writes 0 before it validates), so rc93 stays, only
// warns, and is there for seed001_stuck_init. What the test reads in the
// VMs it reads over bosh ssh, as an operator would, on every shape.
func (f *fleet) seed001Scenario(ctx context.Context, st *rollout) Scenario {
	var canary string
	var others []string
	steps := []Step{}
	if f.shape.qemu {
		steps = append(steps, Step{Name: "the kernel's pipe limit back on the cells by hand (bosh ssh: sudo sysctl -w " + drifted + ")",
			Expects: []string{"pipe-limit-active"},
			Do: func(r *Record) error {
				rows, res, err := f.ssh(ctx, "cell", "sudo sysctl -q -w "+drifted+"; cat /proc/sys/fs/pipe-user-pages-soft")
				if err != nil {
					return err
				}
				active := res.ExitCode == 0 && len(rows) == f.cells
				for _, row := range rows {
					v := strings.TrimSpace(row.Stdout)
					r.Say("   %s: fs.pipe-user-pages-soft %s", row.Instance, v)
					active = active && v != "" && v != "0"
				}
				r.Expect("pipe-limit-active", active, "fs.pipe-user-pages-soft non-zero on %d of %d cells (bosh ssh exited %d)", len(rows), f.cells, res.ExitCode)
				return nil
			}})
	}
	steps = append(steps,
		Step{Name: "bosh deploy with runc 1.0.0-rc93 on the cells", Expects: []string{"seed001-deploy-blocked", "stopped-at-canary-pre-start", "canary-report-cites-rc93", "others-untouched"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				canary, others = order[0], order[1:]
				f.showInstances(ctx, r, "before")
				// The old-runc job on every cell (seed001-ops.yml).
				res, err := f.rollOut(ctx, r, addon{Level: "debug", Seed001: true, PipeLimitKept: f.shape.qemu}, seed001Ops)
				if err != nil {
					return err
				}
				up := updated(res.Output)
				lines := strings.Join(taskLines(res.Output), "\n")
				r.Expect("seed001-deploy-blocked", res.ExitCode != 0, "bosh deploy exited %d", res.ExitCode)
				r.Expect("stopped-at-canary-pre-start", len(up) == 1 && up[0] == canary && strings.Contains(lines, "pre-start"),
					"the task updated %v (canary %s) and failed in pre-start: %t", up, canary, strings.Contains(lines, "pre-start"))
				verdict, report, err := f.lastPreStart(ctx, r, canary)
				if err != nil {
					return err
				}
				r.Expect("canary-report-cites-rc93", strings.Contains(verdict, "BLOCKED by runtime-versions") && strings.Contains(report, "runc-rc93-init-hang"),
					"the canary's pre-start said %q and cites runc-rc93-init-hang: %t", verdict, strings.Contains(report, "runc-rc93-init-hang"))
				cells, err := f.runcOnCells(ctx)
				if err != nil {
					return err
				}
				untouched := true
				for _, c := range others {
					r.Say("   %s: rc93 runc present %t, the addon checks runc at %s", c, cells[c].rc93, cells[c].runc)
					untouched = untouched && !cells[c].rc93 && cells[c].runc == f.shape.runc()
				}
				r.Expect("others-untouched", untouched && cells[canary].rc93 && cells[canary].runc == rc93Path,
					"the canary has the rc93 runc (%t) and an addon that checks it (%s); the other cells %v neither: %t",
					cells[canary].rc93, cells[canary].runc, others, untouched)
				f.showInstances(ctx, r, "after")
				return nil
			}})
	if !f.shape.qemu {
		return Scenario{Name: "seed 001 at the canary", Steps: append(steps, Step{
			Name:    "the remedy: runc upgraded to 1.0.0-rc94 (new-runc in place of old-runc), the addon checking it",
			Expects: []string{"seed001-remedy-completes", "remedy-runs-rc94"},
			Do: func(r *Record) error {
				remedy := addon{Level: "debug", Seed001: true, Runc: rc94Path}
				if f.shape.name == "xenial" {
					// xenial's own runc (/usr/bin/runc 0.0.8) carries the
					// devices deny-all hazard, which rightly blocks there
					// whatever runc the addon names (runtimeConfig): the
					// remedy ignores runtime-versions, as xenial's other
					// lanes do.
					remedy.Seed001 = false
				}
				verdict, _, err := f.remedyDeploy(ctx, r, remedy, "with runc rc94 in place of rc93", canary, seed001RemedyOps)
				if err != nil {
					return err
				}
				cells, err := f.runcOnCells(ctx)
				if err != nil {
					return err
				}
				rc94 := len(cells) == f.cells
				for _, name := range slices.Sorted(maps.Keys(cells)) {
					c := cells[name]
					r.Say("   %s: %s; rc93 present %t; the addon checks %s", name, c.rc94, c.rc93, c.runc)
					rc94 = rc94 && c.rc94 == "runc version 1.0.0-rc94" && !c.rc93 && c.runc == rc94Path
				}
				r.Expect("remedy-runs-rc94", rc94 && strings.HasSuffix(verdict, ": ok"),
					"every cell runs rc94 without rc93 and its addon checks it: %t; the canary's pre-start said %q", rc94, verdict)
				return nil
			}})}
	}
	return Scenario{Name: "seed 001 at the canary", Steps: append(steps, Step{
		Name:    "the remedy on a real kernel: the whole profile again (fs.pipe-user-pages-soft 0), rc93 kept",
		Expects: []string{"seed001-remedy-completes", "rc93-defused", "pipe-limit-off"},
		Do: func(r *Record) error {
			verdict, report, err := f.remedyDeploy(ctx, r, addon{Level: "debug", Seed001: true}, "with rc93 and the whole profile", canary, seed001Ops)
			if err != nil {
				return err
			}
			r.Expect("rc93-defused", strings.HasSuffix(verdict, ": ok") && strings.Contains(report, "runc-rc93-init-hang"),
				"the canary's pre-start said %q, still naming runc-rc93-init-hang (a warning now): %t", verdict, strings.Contains(report, "runc-rc93-init-hang"))
			rows, _, err := f.ssh(ctx, "cell", "cat /proc/sys/fs/pipe-user-pages-soft; sudo test -x "+rc93Path+" && echo rc93")
			if err != nil {
				return err
			}
			off := len(rows) == f.cells
			for _, row := range rows {
				got := strings.Fields(row.Stdout)
				r.Say("   %s: fs.pipe-user-pages-soft and rc93: %s", row.Instance, strings.Join(got, " "))
				off = off && len(got) == 2 && got[0] == "0" && got[1] == "rc93"
			}
			r.Expect("pipe-limit-off", off, "fs.pipe-user-pages-soft 0 with rc93 present on %d of %d cells", len(rows), f.cells)
			return nil
		}})}
}

const (
	seed001Ops       = "src/tests/fleet/manifests/seed001-ops.yml"
	seed001RemedyOps = "src/tests/fleet/manifests/seed001-remedy-ops.yml"
	rc93Path         = "/var/vcap/packages/runc-rc93/bin/runc"
	rc94Path         = "/var/vcap/packages/runc-rc94/bin/runc"
)

// remedyDeploy rolls out seed 001's remedy (a and ops; what says what it
// deploys), expects it to complete, and returns the canary's last
// pre-start verdict and report (lastPreStart).
func (f *fleet) remedyDeploy(ctx context.Context, r *Record, a addon, what, canary string, ops ...string) (verdict, report string, err error) {
	res, err := f.rollOut(ctx, r, a, ops...)
	if err != nil {
		return "", "", err
	}
	r.Expect("seed001-remedy-completes", res.ExitCode == 0, "bosh deploy %s exited %d", what, res.ExitCode)
	return f.lastPreStart(ctx, r, canary)
}

// lastPreStart reads the cell's pre-start log over bosh ssh and returns
// the last validate's verdict line ("cellguard validate --phase pre-start:
// BLOCKED by runtime-versions") and its report, telling the verdict and
// the lines of seed 001's two checks in the story. The agent appends each
// deploy's run.
func (f *fleet) lastPreStart(ctx context.Context, r *Record, cell string) (verdict, report string, err error) {
	rows, _, err := f.ssh(ctx, cell, "sudo cat /var/vcap/sys/log/cellguard/pre-start.stdout.log")
	if err != nil {
		return "", "", err
	}
	if len(rows) != 1 {
		return "", "", fmt.Errorf("bosh ssh %s: %d rows", cell, len(rows))
	}
	const head = "cellguard validate --phase pre-start:"
	i := strings.LastIndex(rows[0].Stdout, head)
	if i < 0 {
		return "", "", fmt.Errorf("%s's pre-start log has no %q", cell, head)
	}
	report = rows[0].Stdout[i:]
	verdict, rest, _ := strings.Cut(report, "\n")
	r.Say("   %s: its last pre-start (/var/vcap/sys/log/cellguard/pre-start.stdout.log, bosh ssh):", cell)
	r.Say("      %s", verdict)
	// The two checks seed 001 is about, not the CVEs rc93 also carries.
	for _, l := range strings.Split(rest, "\n") {
		if strings.Contains(l, "runc-rc93-init-hang") || strings.Contains(l, "stuck-runc-init") || strings.Contains(l, "runc init pid") {
			r.Say("      %s", strings.TrimSpace(l))
		}
	}
	return verdict, report, nil
}

// cellRunc is what runcOnCells read on one cell.
type cellRunc struct {
	rc93 bool   // the old-runc job's rc93 is there
	rc94 string // the first line new-runc's rc94 prints for --version; "" without it
	runc string // the addon's validator.runtime_binaries.runc
}

// runcOnCells reads, over one bosh ssh to every cell, whether rc93 is
// there, what rc94 says it is, and which runc the addon checks.
func (f *fleet) runcOnCells(ctx context.Context) (map[string]cellRunc, error) {
	rows, _, err := f.ssh(ctx, "cell", "sudo test -x "+rc93Path+" && echo rc93; sudo test -x "+rc94Path+" && sudo "+rc94Path+
		" --version | head -1; sudo cat "+cellguardConfig)
	if err != nil {
		return nil, err
	}
	cells := map[string]cellRunc{}
	for _, row := range rows {
		// The config is JSON; what the tests printed comes before it.
		i := strings.Index(row.Stdout, "{")
		if i < 0 {
			return nil, fmt.Errorf("%s printed no %s: %q", row.Instance, cellguardConfig, row.Stdout)
		}
		var c addonConfig
		if err := json.Unmarshal([]byte(row.Stdout[i:]), &c); err != nil {
			return nil, fmt.Errorf("%s's %s: %w", row.Instance, cellguardConfig, err)
		}
		cr := cellRunc{runc: c.Validator.RuntimeBinaries["runc"]}
		for _, l := range strings.Split(row.Stdout[:i], "\n") {
			switch l = strings.TrimSpace(l); {
			case l == "rc93":
				cr.rc93 = true
			case strings.HasPrefix(l, "runc version "):
				cr.rc94 = l
			}
		}
		cells[row.Instance] = cr
	}
	return cells, nil
}

// stuckInitScenario is seed 001's hazard itself on a real kernel, after
// seed001_canary left rc93 on the cells with the whole profile in force
// (fs.pipe-user-pages-soft 0): on the canary, by the test's hand over bosh
// ssh and without cellguard, the soft limit at 1 (root is over it, so a
// new pipe of a process without CAP_SYS_RESOURCE gets two pages) and rc93
// runs a container whose seccomp filter (seed001-syscalls.txt: 8,888
// bytes exported) does not fit: its runc init sleeps in pipe_write. The
// next deploy's pre-start writes the limit back to 0, which wakes nothing,
// and stuck-runc-init blocks the canary. The remedy is the check's fix:
// SIGKILL rc93's parent, then the init, delete the container; the deploy
// then completes.
func (f *fleet) stuckInitScenario(ctx context.Context) Scenario {
	var canary string
	return Scenario{Name: "seed 001's runc init stuck on exhausted pipes", Steps: []Step{
		{Name: "on the canary, by hand (bosh ssh): fs.pipe-user-pages-soft 1, rc93 runs a container with a 362-rule seccomp filter",
			Expects: []string{"init-stuck-in-pipe-write"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				canary = order[0]
				config, err := f.stuckBundle(ctx, canary)
				if err != nil {
					return err
				}
				script := fmt.Sprintf(`set -e
d=%[1]s; cd $d; echo %[2]s | base64 -d > config.json
sysctl -q -w fs.pipe-user-pages-soft=1
setsid -f sh -c 'echo $$ > %[1]s/rc93.pid; exec %[3]s --root %[4]s run -d --bundle %[1]s %[5]s' </dev/null >%[1]s/rc93.log 2>&1
for i in $(seq 240); do
  for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = "runc:[2:INIT]" ] && init=${p#/proc/}; done
  [ -n "$init" ] && [ "$(cat /proc/$init/wchan 2>/dev/null)" = pipe_write ] && break
  sleep 1
done
echo "parent $(cat rc93.pid), init ${init:-none} in $(cat /proc/${init:-0}/wchan 2>/dev/null) after ${i}s; fs.pipe-user-pages-soft $(cat /proc/sys/fs/pipe-user-pages-soft)"
cat rc93.log`, stuckDir, base64.StdEncoding.EncodeToString(config), rc93Path, stuckRoot, stuckID)
				rows, res, err := f.ssh(ctx, canary, "sudo sh -c "+shellQuote(script))
				if err != nil {
					return err
				}
				out := ""
				if len(rows) == 1 {
					out = rows[0].Stdout
				}
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					r.Say("   %s: %s", canary, l)
				}
				r.Expect("init-stuck-in-pipe-write", res.ExitCode == 0 && strings.Contains(out, " in pipe_write after "),
					"rc93's runc init on %s sleeps in pipe_write (bosh ssh exited %d)", canary, res.ExitCode)
				return nil
			}},
		{Name: "bosh deploy (a new log level): pre-start writes the limit back to 0 and still blocks on the stuck init",
			Expects: []string{"stuck-deploy-blocked", "stuck-canary-report"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "info", Seed001: true}, seed001Ops)
				if err != nil {
					return err
				}
				up := updated(res.Output)
				r.Expect("stuck-deploy-blocked", res.ExitCode != 0 && len(up) == 1 && up[0] == canary,
					"bosh deploy exited %d after updating %v (canary %s)", res.ExitCode, up, canary)
				verdict, _, err := f.lastPreStart(ctx, r, canary)
				if err != nil {
					return err
				}
				r.Expect("stuck-canary-report", strings.Contains(verdict, "BLOCKED by") && strings.Contains(verdict, "stuck-runc-init") && !strings.Contains(verdict, "runtime-versions"),
					"the canary's pre-start said %q: stuck-runc-init blocks, runtime-versions (the limit is 0 again) does not", verdict)
				return nil
			}},
		{Name: "the remedy (stuck-runc-init's fix): SIGKILL rc93's parent, then its init; the container deleted; bosh deploy",
			Expects: []string{"no-init-left", "stuck-remedy-completes"},
			Do: func(r *Record) error {
				script := fmt.Sprintf(`cd %[1]s; kill -KILL $(cat rc93.pid) 2>/dev/null
for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = "runc:[2:INIT]" ] && kill -KILL ${p#/proc/}; done
sleep 2; %[2]s --root %[3]s delete -f %[4]s 2>&1; rm -rf %[3]s/%[4]s; rmdir /sys/fs/cgroup/garden/%[4]s 2>/dev/null
left=0; for p in /proc/[0-9]*; do [ "$(cat $p/comm 2>/dev/null)" = "runc:[2:INIT]" ] && left=$((left+1)); done
echo "runc init processes left: $left"; cd /; rm -rf %[1]s`, stuckDir, rc93Path, stuckRoot, stuckID)
				rows, _, err := f.ssh(ctx, canary, "sudo sh -c "+shellQuote(script))
				if err != nil {
					return err
				}
				out := ""
				if len(rows) == 1 {
					out = strings.TrimSpace(rows[0].Stdout)
				}
				r.Say("   %s: %s", canary, strings.ReplaceAll(out, "\n", "; "))
				r.Expect("no-init-left", strings.HasSuffix(out, "runc init processes left: 0"), "%s: %s", canary, out)
				res, err := f.rollOut(ctx, r, addon{Level: "info", Seed001: true}, seed001Ops)
				if err != nil {
					return err
				}
				r.Expect("stuck-remedy-completes", res.ExitCode == 0, "bosh deploy exited %d", res.ExitCode)
				return nil
			}},
	}}
}

// The stuck container: its bundle in the canary's data disk, in the
// runtime root the addon validates (Garden's), so its init is one the
// validator looks at as Garden's.
const (
	stuckDir  = "/var/vcap/data/seed001-stuck"
	stuckRoot = "/run/garden-runc"
	stuckID   = "seed001-stuck"
)

// stuckBundle makes the bundle's rootfs on cell (the stemcell's own
// /bin/sleep and the libraries ldd names: rc93 looks the program up
// before it loads seccomp) and returns its config: rc93's own `runc
// spec`, noNewPrivileges (seccomp then loads after the capabilities are
// dropped), the 362-rule allow list for x86_64, x86 and x32, default
// ERRNO, the cgroup at /garden/seed001-stuck.
func (f *fleet) stuckBundle(ctx context.Context, cell string) ([]byte, error) {
	script := fmt.Sprintf(`set -e; rm -rf %[1]s; mkdir -p %[1]s/rootfs/proc %[1]s/rootfs/dev %[1]s/rootfs/sys
for x in /usr/bin/sleep $(ldd /usr/bin/sleep | grep -o '/[^ ]*'); do cp --parents -L "$x" %[1]s/rootfs/; done
cd %[1]s && %[2]s spec && cat config.json`, stuckDir, rc93Path)
	rows, res, err := f.ssh(ctx, cell, "sudo sh -c "+shellQuote(script))
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || res.ExitCode != 0 {
		return nil, fmt.Errorf("the stuck bundle on %s: bosh ssh exited %d, %d rows", cell, res.ExitCode, len(rows))
	}
	var spec map[string]any
	if err := json.Unmarshal([]byte(rows[0].Stdout), &spec); err != nil {
		return nil, fmt.Errorf("rc93's runc spec on %s: %w", cell, err)
	}
	names, err := os.ReadFile(filepath.Join(f.repo, "src/tests/qemu/testdata/seed001-syscalls.txt"))
	if err != nil {
		return nil, err
	}
	var rules []map[string]any
	for _, n := range strings.Split(string(names), "\n") {
		if n = strings.TrimSpace(n); n != "" && !strings.HasPrefix(n, "#") {
			rules = append(rules, map[string]any{"names": []string{n}, "action": "SCMP_ACT_ALLOW"})
		}
	}
	proc, ok := spec["process"].(map[string]any)
	linux, ok2 := spec["linux"].(map[string]any)
	if !ok || !ok2 {
		return nil, fmt.Errorf("rc93's runc spec on %s has no process or linux section", cell)
	}
	proc["args"], proc["terminal"], proc["noNewPrivileges"] = []string{"/usr/bin/sleep", "100000"}, false, true
	spec["root"] = map[string]any{"path": stuckDir + "/rootfs", "readonly": true}
	linux["cgroupsPath"] = "/garden/" + stuckID
	linux["seccomp"] = map[string]any{
		"defaultAction": "SCMP_ACT_ERRNO",
		"architectures": []string{"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"},
		"syscalls":      rules,
	}
	return json.Marshal(spec)
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
