package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// the create-env local cell's heal and protect scenarios, brought onto the director. They
// run after leavingScenario, whose recreate and warm deploy left every cell
// on a VM the trigger never ran on: the first realization on each is still
// to come, so the trigger moves container processes there unless the unit
// holding monit is delegated.

const watchLog = "/var/vcap/sys/log/cellguard/watch.log"

// metric reads one family's value (summed over its series) from the watch's
// /metrics in the VM's network namespace; ok is false when it cannot.
func metric(ctx context.Context, vm VM, name string) (v float64, ok bool) {
	out, err := exec.CommandContext(ctx, "nsenter", "-t", vm.InitPID, "-n", "curl", "-sf", "--max-time", "2",
		"http://127.0.0.1:14875/metrics").Output()
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != name && !strings.HasPrefix(f[0], name+"{")) {
			continue
		}
		if x, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			v, ok = v+x, true
		}
	}
	return v, ok
}

// watchReady waits until watch in the VM has scanned and counts no escape.
func watchReady(ctx context.Context, vm VM) bool {
	for i := 0; i < 120; i++ {
		n, ok := metric(ctx, vm, "cellguard_escaped_processes")
		if _, scanned := metric(ctx, vm, "cellguard_scans_total"); ok && scanned && n == 0 {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

// watchLines are watch's log lines in the VM whose message is
// cellguard.watch.MSG.
func watchLines(ctx context.Context, vm VM, msg string) []string {
	out, _ := vm.Exec(ctx, "cat", watchLog)
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(l), &e) == nil && e.Message == "cellguard.watch."+msg {
			lines = append(lines, l)
		}
	}
	return lines
}

// verdictLine is validate's human verdict line in out, or its first line.
func verdictLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "cellguard validate --phase") {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(out)
}

// rollOutEverywhere deploys addon a (with ops files) and expects the deploy
// to complete.
func (f *fleet) rollOutEverywhere(ctx context.Context, r *Record, id string, a addon, ops ...string) error {
	res, err := f.rollOut(ctx, r, a, ops...)
	if err != nil {
		return err
	}
	r.Expect(id, res.ExitCode == 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
	if res.ExitCode != 0 {
		return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
	}
	return nil
}

// healScenario: cellguard.watch.heal rolled out, then the seed-000 trigger
// on a cell: watch moves every escaped process back, and the drain-phase
// validation there passes (the local cell's "heal").
func (f *fleet) healScenario(ctx context.Context) Scenario {
	return Scenario{Name: "watch heals (cellguard.watch.heal)", Steps: []Step{
		{Name: "bosh deploy with cellguard.watch.heal", Expects: []string{"heal-rolled-out"},
			Do: func(r *Record) error {
				return f.rollOutEverywhere(ctx, r, "heal-rolled-out", addon{Level: "info", Heal: true})
			}},
		{Name: "the seed-000 trigger on a cell; watch moves the processes back", Expects: []string{"watch-healed", "healed-validate-passes"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				cell := order[0]
				vm, err := f.vm(cell)
				if err != nil {
					return err
				}
				if !watchReady(ctx, vm) {
					return fmt.Errorf("watch on %s never scanned with 0 escapes", cell)
				}
				h0, _ := metric(ctx, vm, "cellguard_healed_processes_total")
				t0 := time.Now()
				if _, err := f.trigger(ctx, cell); err != nil {
					return err
				}
				var h, n float64
				var hok, nok bool
				for time.Since(t0) < 60*time.Second {
					h, hok = metric(ctx, vm, "cellguard_healed_processes_total")
					n, nok = metric(ctx, vm, "cellguard_escaped_processes")
					if hok && nok && h > h0 && n == 0 {
						break
					}
					time.Sleep(250 * time.Millisecond)
				}
				took := time.Since(t0)
				healed := watchLines(ctx, vm, "healed")
				r.Say("   %s (%s): the seed-000 trigger started; watch.log, healed:", cell, vm.CID)
				for i, l := range healed {
					if i == 6 {
						r.Say("      … (%d lines)", len(healed))
						break
					}
					r.Say("      %s", l)
				}
				r.Expect("watch-healed", hok && nok && h > h0 && n == 0 && len(healed) > 0,
					"cellguard_healed_processes_total %v -> %v, cellguard_escaped_processes %v, %d healed lines, read within %s of the trigger's start",
					h0, h, n, len(healed), took.Round(100*time.Millisecond))
				out, verr := validateDrain(ctx, vm)
				r.Say("   cellguard validate --phase drain on %s: %s", cell, verdictLine(out))
				r.Expect("healed-validate-passes", verr == nil && !strings.Contains(out, "BLOCKED"), "validate --phase drain after the heal: err %v, BLOCKED %t", verr, strings.Contains(out, "BLOCKED"))
				return nil
			}},
	}}
}

// protectScenario: on its lane's cell, first deployed unprotected,
// cellguard.supervisor.protect rolled out onto the running cell, with
// validator.fix: protect-supervisor's own realization of the
// unit's cgroups moves containers that already run on systemd 249 and 252
// (docs/bosh.md, "run after the containers exist"; a first run of this
// scenario without fix stopped at the second cell's pre-start), and fix
// moves them back. Then bosh recreate: on new VMs pre-start protects the
// supervisor before monit starts Garden, and the seed-000 trigger moves
// nothing (the local cell's "protect").
func (f *fleet) protectScenario(ctx context.Context) Scenario {
	return Scenario{Name: "the unit holding monit delegated (cellguard.supervisor.protect)", Steps: []Step{
		f.laneDeployStep(ctx, "protect-lane-deployed", addon{Level: "info"}),
		{Name: "bosh deploy with cellguard.supervisor.protect and validator.fix", Expects: []string{"protect-rolled-out", "supervisor-delegated"},
			Do: func(r *Record) error {
				if err := f.rollOutEverywhere(ctx, r, "protect-rolled-out", addon{Level: "debug", Protect: true, Fix: true}); err != nil {
					return err
				}
				return f.expectDelegated(ctx, r)
			}},
		{Name: "bosh recreate: new VMs, protected before Garden starts; the seed-000 trigger on one", Expects: []string{"protected-recreate-completes", "protected-nothing-moved"},
			Do: func(r *Record) error {
				res, err := f.bosh.Run(ctx, "-d", f.dep, "recreate")
				if err != nil {
					return err
				}
				r.Expect("protected-recreate-completes", res.ExitCode == 0, "bosh recreate exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				if res.ExitCode != 0 {
					// CI-I: exit 1 after 2m4s and nothing else kept.
					sayTask(r, "bosh recreate", res)
					f.sayPreStartFailure(ctx, r, res)
					return fmt.Errorf("bosh recreate exited %d", res.ExitCode)
				}
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				return f.expectNothingMoves(ctx, r, order[len(order)-1], "protected-nothing-moved")
			}},
	}}
}

// expectDelegated records supervisor-delegated: on every cell the unit
// holding monit has cellguard's drop-in and systemd reads Delegate=yes.
func (f *fleet) expectDelegated(ctx context.Context, r *Record) error {
	order, err := f.cellOrder(ctx)
	if err != nil {
		return err
	}
	delegated := 0
	for _, c := range order {
		vm, err := f.vm(c)
		if err != nil {
			return err
		}
		dropIns, _ := filepath.Glob(filepath.Join("/proc", vm.InitPID, "root/etc/systemd/system/*.service.d/50-cellguard-delegate.conf"))
		for _, d := range dropIns {
			unit := strings.TrimSuffix(filepath.Base(filepath.Dir(d)), ".d")
			show, _ := vm.Exec(ctx, "systemctl", "show", "-p", "Delegate", "-p", "DelegateControllers", unit)
			r.Say("   %s: %s: %s", c, unit, strings.Join(strings.Fields(show), " "))
			if strings.Contains(show, "Delegate=yes") {
				delegated++
			}
		}
		// What pre-start's validation said after protect-supervisor (fix
		// moves back what the realization moved).
		report, _ := vm.Exec(ctx, "cat", "/var/vcap/sys/log/cellguard/pre-start.stdout.log")
		for _, l := range strings.Split(report, "\n") {
			if strings.Contains(l, "moved back") || strings.Contains(l, "cellguard validate --phase") || strings.Contains(l, "runs in") {
				r.Say("      %s", strings.TrimSpace(l))
			}
		}
	}
	r.Expect("supervisor-delegated", delegated == len(order), "the unit holding monit delegated in place (systemctl show: Delegate=yes) on %d of %d cells", delegated, len(order))
	return nil
}

// startScenario: Garden's monit file calls `cellguard start|stop garden`
// (start-ops.yml, cellguard.daemons), deployed onto its lane's new VMs, where
// the stand-in, and so its containers, start in the delegated
// cellguard-garden.service; then the seed-000 trigger on one moves nothing
// (the local cell's "start"). Supervisor protection is off here: the
// delegated unit alone keeps the containers in place.
func (f *fleet) startScenario(ctx context.Context) Scenario {
	return Scenario{Name: "Garden in its delegated unit (cellguard start garden)", Steps: []Step{
		{Name: "bosh deploy onto new VMs: monit calls cellguard start|stop garden, supervisor protection off",
			Expects: []string{"start-deploy-completes", "garden-in-delegated-unit"},
			Do: func(r *Record) error {
				if _, err := f.runtimeConfig(ctx, addon{Level: "info", Start: true}); err != nil {
					return err
				}
				res, err := f.deploy(ctx, "src/tests/fleet/manifests/start-ops.yml")
				if err != nil {
					return err
				}
				r.Say("   bosh deploy -o start-ops.yml exited %d after %s (log %s)", res.ExitCode, res.Took.Round(time.Second), res.Log)
				r.Expect("start-deploy-completes", res.ExitCode == 0, "bosh deploy exited %d", res.ExitCode)
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				in := 0
				for _, c := range order {
					vm, err := f.vm(c)
					if err != nil {
						return err
					}
					standinReady(ctx, vm)
					pid, _ := vm.Exec(ctx, "cat", "/var/vcap/sys/run/garden/garden.pid")
					cg, _ := vm.Exec(ctx, "cat", "/proc/"+strings.TrimSpace(pid)+"/cgroup")
					show, _ := vm.Exec(ctx, "systemctl", "show", "-p", "Delegate", "cellguard-garden.service")
					where := systemdCgroup(cg)
					r.Say("   %s: the Garden stand-in (pid %s) runs in %s; cellguard-garden.service %s", c, strings.TrimSpace(pid), where, strings.TrimSpace(show))
					if where == "/system.slice/cellguard-garden.service" && strings.Contains(show, "Delegate=yes") {
						in++
					}
				}
				r.Expect("garden-in-delegated-unit", in == len(order), "the stand-in in cellguard-garden.service (Delegate=yes) on %d of %d cells", in, len(order))
				return nil
			}},
		{Name: "the seed-000 trigger on a cell whose Garden runs in its delegated unit", Expects: []string{"start-nothing-moved"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				return f.expectNothingMoves(ctx, r, order[0], "start-nothing-moved")
			}},
	}}
}

// expectNothingMoves fires the seed-000 trigger on cell, once its watch has
// scanned, and records id: nothing escaped, by the drain-phase validation
// and by watch's gauge.
func (f *fleet) expectNothingMoves(ctx context.Context, r *Record, cell, id string) error {
	vm, err := f.vm(cell)
	if err != nil {
		return err
	}
	if !watchReady(ctx, vm) {
		return fmt.Errorf("watch on %s never scanned with 0 escapes", cell)
	}
	if _, err := f.trigger(ctx, cell); err != nil {
		return err
	}
	// watch scans after every systemd job; give it the trigger's.
	time.Sleep(3 * time.Second)
	n, nok := metric(ctx, vm, "cellguard_escaped_processes")
	out, verr := validateDrain(ctx, vm)
	r.Say("   %s (%s): the seed-000 trigger started; cellguard validate --phase drain: %s", cell, vm.CID, verdictLine(out))
	r.Expect(id, verr == nil && !strings.Contains(out, "BLOCKED") && nok && n == 0,
		"validate --phase drain: err %v, BLOCKED %t; watch's cellguard_escaped_processes %v (read: %t)", verr, strings.Contains(out, "BLOCKED"), n, nok)
	return nil
}
