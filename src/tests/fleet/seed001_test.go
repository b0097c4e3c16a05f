package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// seed001Scenario: seed 001 at the canary, through the director. The cells
// get runc 1.0.0-rc93 (test-release's old-runc job: rc93 itself, built with
// seccomp from the Go module proxy, stageRC93) and an addon whose validator
// checks it. The hang's condition is a non-zero fs.pipe-user-pages-soft:
//   - an nspawn box reads the host's (16384, the kernel's default: active),
//     and cellguard cannot write fs.* there (only net.* in nspawn);
//   - a QEMU VM runs the whole profile (0), so its seed cell is an
//     operator's who left the key out: the addon drops it
//     (cellguard.sysctl.remove) and the test's hand puts the kernel's default
//     back over bosh ssh, as a boot without cellguard's file would have it.
//
// runtime-versions then blocks the canary's pre-start: the deploy stops at
// the canary and the other cells are untouched. The remedy: on boxes the
// old-runc job gone; on VMs the profile whole again, which defuses the
// hazard (pre-start writes 0 before it validates), so rc93 stays and only
// warns. What the test reads in the VMs it reads over bosh ssh, as an
// operator would, on every shape.
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
			Name: "the remedy: runc fixed (the old-runc job gone), the addon as before", Expects: []string{"seed001-remedy-completes"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "debug"})
				if err != nil {
					return err
				}
				r.Expect("seed001-remedy-completes", res.ExitCode == 0, "bosh deploy without the rc93 runc exited %d", res.ExitCode)
				return nil
			}})}
	}
	return Scenario{Name: "seed 001 at the canary", Steps: append(steps, Step{
		Name:    "the remedy on a real kernel: the whole profile again (fs.pipe-user-pages-soft 0), rc93 kept",
		Expects: []string{"seed001-remedy-completes", "rc93-defused", "pipe-limit-off"},
		Do: func(r *Record) error {
			res, err := f.rollOut(ctx, r, addon{Level: "debug", Seed001: true}, seed001Ops)
			if err != nil {
				return err
			}
			r.Expect("seed001-remedy-completes", res.ExitCode == 0, "bosh deploy with rc93 and the whole profile exited %d", res.ExitCode)
			verdict, report, err := f.lastPreStart(ctx, r, canary)
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
	seed001Ops = "src/tests/fleet/manifests/seed001-ops.yml"
	rc93Path   = "/var/vcap/packages/runc-rc93/bin/runc"
)

// lastPreStart reads the cell's pre-start log over bosh ssh and returns
// the last validate's verdict line ("cellguard validate --phase pre-start:
// BLOCKED by runtime-versions") and its report, telling the lines about
// runtime versions in the story. The agent appends each deploy's run.
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
	// bosh ssh's output ends its lines with \r\n.
	report = strings.ReplaceAll(rows[0].Stdout[i:], "\r\n", "\n")
	verdict, rest, _ := strings.Cut(report, "\n")
	r.Say("   %s: its last pre-start (/var/vcap/sys/log/cellguard/pre-start.stdout.log, bosh ssh):", cell)
	r.Say("      %s", verdict)
	for _, l := range strings.Split(rest, "\n") {
		if strings.Contains(l, "runc-rc93") || strings.Contains(l, "runtime-versions") {
			r.Say("      %s", strings.TrimSpace(l))
		}
	}
	return verdict, report, nil
}

// cellRunc is what runcOnCells read on one cell.
type cellRunc struct {
	rc93 bool   // the old-runc job's rc93 is there
	runc string // the addon's validator.runtime_binaries.runc
}

// runcOnCells reads, over one bosh ssh to every cell, whether rc93 is
// there and which runc the addon checks.
func (f *fleet) runcOnCells(ctx context.Context) (map[string]cellRunc, error) {
	rows, _, err := f.ssh(ctx, "cell", "sudo test -x "+rc93Path+" && echo rc93; sudo cat "+cellguardConfig)
	if err != nil {
		return nil, err
	}
	cells := map[string]cellRunc{}
	for _, row := range rows {
		first, rest, _ := strings.Cut(row.Stdout, "\n")
		has := strings.TrimSpace(first) == "rc93"
		if !has {
			rest = row.Stdout
		}
		var c addonConfig
		if err := json.Unmarshal([]byte(rest), &c); err != nil {
			return nil, fmt.Errorf("%s's %s: %w", row.Instance, cellguardConfig, err)
		}
		cells[row.Instance] = cellRunc{rc93: has, runc: c.Validator.RuntimeBinaries["runc"]}
	}
	return cells, nil
}
