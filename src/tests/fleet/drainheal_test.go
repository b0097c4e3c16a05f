package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Drain's heal (cellguard.drain.heal, on as the job ships it) on the
// director's cells: an update's drain moves the escapes back and the update
// completes; an escape it cannot move blocks, named with why.

// healHierarchies are the v1 hierarchies the seed-000 trigger moves on some
// shape (README.md, "Shapes"); a container process is in its container when
// each of them holds it below garden/<id>.
var healHierarchies = []string{"blkio", "cpu", "cpuacct", "memory", "devices", "pids"}

// containerProc is one process of a stand-in container, read in the VM.
type containerProc struct {
	id, pid string
	// out are the hierarchies (of healHierarchies) where it is not below
	// garden/<id>, as hierarchy:path.
	out []string
}

// containerProcsScript prints, for every container the runtimes' state
// holds, each process in its init's pid namespace: "id pid
// controllers:path ...".
const containerProcsScript = `for s in /run/garden-runc/*/state.json /run/containerd/runc/garden/*/state.json; do
  [ -f "$s" ] || continue
  id=$(basename "$(dirname "$s")")
  init=$(grep -o '"init_process_pid":[0-9]*' "$s" | cut -d: -f2)
  ns=$(readlink "/proc/${init:-0}/ns/pid") || continue
  for d in /proc/[0-9]*; do
    [ "$(readlink "$d/ns/pid" 2>/dev/null)" = "$ns" ] || continue
    echo "$id ${d#/proc/} $(cut -d: -f2- "$d/cgroup" | tr '\n' ' ')"
  done
done`

// containerProcs reads the stand-in's container processes and where they
// are, by the test's hand in the VM.
func containerProcs(ctx context.Context, vm VM) ([]containerProc, error) {
	out, err := vm.Exec(ctx, "sh", "-c", containerProcsScript)
	if err != nil {
		return nil, err
	}
	return parseContainerProcs(out), nil
}

// parseContainerProcs reads containerProcsScript's output.
func parseContainerProcs(out string) []containerProc {
	var procs []containerProc
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		p := containerProc{id: f[0], pid: f[1]}
		for _, e := range f[2:] {
			ctrls, path, ok := strings.Cut(e, ":")
			if !ok {
				continue
			}
			for _, c := range strings.Split(ctrls, ",") {
				if indexOf(healHierarchies, c) >= 0 && !strings.HasSuffix(path, "/garden/"+p.id) {
					p.out = append(p.out, c+":"+path)
				}
			}
		}
		procs = append(procs, p)
	}
	return procs
}

// removeBlkioScript removes each container's blkio cgroup, the path its
// runtime's state records ("id path" per one removed). rmdir takes only an
// empty cgroup: the trigger moved the container's processes out of it.
const removeBlkioScript = `for s in /run/garden-runc/*/state.json /run/containerd/runc/garden/*/state.json; do
  [ -f "$s" ] || continue
  p=$(grep -o '"blkio":"[^"]*"' "$s" | head -n 1 | cut -d'"' -f4)
  [ -n "$p" ] && rmdir "$p" && echo "$(basename "$(dirname "$s")") $p"
done`

// unhealable makes a cell's escapes ones drain cannot heal, as a destroy
// that removed a container's empty cgroups while its processes were
// outside leaves them (docs/lifecycle.md, "Healing at drain"; rep may
// destroy one between cellguard's judging and its heal): the blkio cgroup
// each container's state records is removed, so moving its processes back
// there fails, while their other hierarchies' moves can hold
// (TestDrainOnARealEscape's case, on a director's cell).
func (f *fleet) unhealable(ctx context.Context, r *Record, vm VM, name, id string) error {
	procs, err := containerProcs(ctx, vm)
	if err != nil {
		return err
	}
	out, err := vm.Exec(ctx, "sh", "-c", removeBlkioScript)
	if err != nil {
		return err
	}
	removed := strings.Split(strings.TrimSpace(out), "\n")
	containers := map[string]bool{}
	for _, p := range procs {
		containers[p.id] = true
	}
	r.Say("   %s: the containers' blkio cgroups removed (the test's hand, as a destroy that emptied them would): %s", name, strings.Join(removed, "; "))
	r.Expect(id, strings.TrimSpace(out) != "" && len(removed) == len(containers),
		"%d of %d containers' recorded blkio cgroups removed on %s", len(removed), len(containers), name)
	return nil
}

// drainEntry is one of cellguard drain's log lines in drain.log (lager's
// JSON): a heal line per escape, the decision.
type drainEntry struct {
	Message string `json:"message"`
	Data    struct {
		Outcome   string `json:"outcome"`
		Reason    string `json:"reason"`
		Result    string `json:"result"`
		Why       string `json:"why"`
		Hierarchy string `json:"hierarchy"`
		PID       int    `json:"pid"`
	} `json:"data"`
}

// lastDrain is the last decision in a drain.log and the heal lines of the
// drain that made it.
func lastDrain(log string) (decided *drainEntry, heals []drainEntry) {
	for _, l := range strings.Split(log, "\n") {
		var e drainEntry
		if json.Unmarshal([]byte(strings.TrimSpace(l)), &e) != nil {
			continue
		}
		switch e.Message {
		case "cellguard.drain.starting":
			heals, decided = nil, nil
		case "cellguard.drain.heal":
			heals = append(heals, e)
		case "cellguard.drain.decided":
			decided = &e
		}
	}
	return decided, heals
}

// drainLog reads a cell's drain.log over bosh ssh, as an operator would:
// cellguard drain's own lines.
func (f *fleet) drainLog(ctx context.Context, r *Record, name string) (string, error) {
	rows, res, err := f.ssh(ctx, name, `sudo grep -F '"cellguard.drain.' /var/vcap/sys/log/cellguard/drain.log | tail -n 80`)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("bosh ssh %s: %d result rows, exit %d (log %s)", name, len(rows), res.ExitCode, res.Log)
	}
	r.Say("   bosh ssh %s -c 'sudo grep cellguard.drain. drain.log | tail' (exit %s), its last drain:", name, rows[0].ExitCode)
	decided, heals := lastDrain(rows[0].Stdout)
	for _, h := range heals {
		r.Say("      heal pid %d in %s: %s: %s", h.Data.PID, h.Data.Hierarchy, h.Data.Result, h.Data.Why)
	}
	if decided != nil {
		r.Say("      decided: %s: %s", decided.Data.Outcome, decided.Data.Reason)
	}
	return rows[0].Stdout, nil
}

// escapeAt makes seed-000 escapes on the cell at position pos of the
// director's update order (escape, expectation id) and returns the order
// and that cell's VM.
func (f *fleet) escapeAt(ctx context.Context, r *Record, pos int, id string) ([]string, VM, error) {
	order, err := f.cellOrder(ctx)
	if err != nil {
		return nil, VM{}, err
	}
	if pos >= len(order) {
		return nil, VM{}, fmt.Errorf("no cell at position %d of %v", pos, order)
	}
	if err := f.escape(ctx, r, order[pos], id); err != nil {
		return nil, VM{}, err
	}
	vm, err := f.vm(order[pos])
	return order, vm, err
}

// drainHealsScenario: escapes on the lane's second cell in the update order,
// then a runtime-config change deployed: that cell's drain moves them back
// and the update completes; the same processes are back in their cgroups.
// Long because a scenario is one value holding its steps and expectations.
func (f *fleet) drainHealsScenario(ctx context.Context) Scenario {
	var cell string
	var order []string
	var before []containerProc
	return Scenario{Name: "an escape at drain is healed", Steps: []Step{
		f.laneDeployStep(ctx, "drain-heal-lane-deployed", addon{Level: "info"}),
		{Name: "escapes on the second cell in the update order", Expects: []string{"heal-escapes-made", "heal-processes-out"},
			Do: func(r *Record) error {
				var vm VM
				var err error
				if order, vm, err = f.escapeAt(ctx, r, 1, "heal-escapes-made"); err != nil {
					return err
				}
				cell = order[1]
				if before, err = containerProcs(ctx, vm); err != nil {
					return err
				}
				out := 0
				for _, p := range before {
					r.Say("      %s pid %s outside its container in: %s", p.id, p.pid, strings.Join(p.out, " "))
					if len(p.out) > 0 {
						out++
					}
				}
				r.Expect("heal-processes-out", out > 0, "%d of %d container processes on %s are outside their container in some hierarchy", out, len(before), cell)
				return nil
			}},
		{Name: "bosh deploy with the changed runtime config (log level debug): drain heals",
			Expects: []string{"heal-deploy-completes", "heal-every-cell-updated", "drain-log-healed", "processes-back"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "debug"})
				if err != nil {
					return err
				}
				r.Expect("heal-deploy-completes", res.ExitCode == 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				levels := f.levels(ctx, order)
				r.Expect("heal-every-cell-updated", levels[order[0]] == "debug" && levels[cell] == "debug", "log level per cell: %v", levels)
				log, err := f.drainLog(ctx, r, cell)
				if err != nil {
					return err
				}
				decided, heals := lastDrain(log)
				moved, other := 0, 0
				for _, h := range heals {
					if h.Data.Result == "moved" {
						moved++
					} else {
						other++
					}
				}
				r.Expect("drain-log-healed", decided != nil && decided.Data.Outcome == "healed" && moved > 0 && other == 0,
					"%s's last drain decided %v; %d heal lines moved, %d not", cell, outcomeOf(decided), moved, other)
				vm, err := f.vm(cell)
				if err != nil {
					return err
				}
				after, err := containerProcs(ctx, vm)
				if err != nil {
					return err
				}
				now := map[string]containerProc{}
				for _, p := range after {
					now[p.id+"/"+p.pid] = p
				}
				back := 0
				for _, p := range before {
					a, ok := now[p.id+"/"+p.pid]
					switch {
					case !ok:
						r.Say("      %s pid %s: gone", p.id, p.pid)
					case len(a.out) > 0:
						r.Say("      %s pid %s: still outside in %s", p.id, p.pid, strings.Join(a.out, " "))
					default:
						back++
					}
				}
				r.Expect("processes-back", len(before) > 0 && back == len(before),
					"%d of %d container processes alive with the same pid and in their container in %s", back, len(before), strings.Join(healHierarchies, " "))
				return nil
			}},
	}}
}

// outcomeOf is a decision's outcome, "none" without one.
func outcomeOf(d *drainEntry) string {
	if d == nil {
		return "none"
	}
	return d.Data.Outcome
}

// drainUnhealableScenario: escapes on the canary (a cell the trigger never
// ran on), its containers' blkio cgroups removed, then a runtime-config
// change deployed: the canary's drain moves what it can, blocks on the
// rest, and its decision names each process left with why.
func (f *fleet) drainUnhealableScenario(ctx context.Context) Scenario {
	var canary string
	var order []string
	return Scenario{Name: "an escape drain cannot heal blocks", Steps: []Step{
		{Name: "escapes on the canary, their blkio cgroups gone", Expects: []string{"unhealable-escapes-made", "blkio-cgroups-removed"},
			Do: func(r *Record) error {
				var vm VM
				var err error
				if order, vm, err = f.escapeAt(ctx, r, 0, "unhealable-escapes-made"); err != nil {
					return err
				}
				canary = order[0]
				return f.unhealable(ctx, r, vm, canary, "blkio-cgroups-removed")
			}},
		{Name: "bosh deploy with the changed runtime config (log level info): the canary's drain blocks",
			Expects: []string{"unhealable-deploy-blocked", "stopped-at-canary-drain", "drain-names-why", "other-cell-untouched"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "info"})
				if err != nil {
					return err
				}
				r.Expect("unhealable-deploy-blocked", res.ExitCode != 0, "bosh deploy exited %d", res.ExitCode)
				up := updated(res.Output)
				drainErr := strings.Contains(strings.Join(taskLines(res.Output), "\n"), "drain")
				r.Expect("stopped-at-canary-drain", len(up) == 1 && up[0] == canary && drainErr,
					"the task updated %v and failed at the canary %s with a drain error: %t", up, canary, drainErr)
				log, err := f.drainLog(ctx, r, canary)
				if err != nil {
					return err
				}
				decided, heals := lastDrain(log)
				var failedPIDs []int
				moved, failedOther := 0, 0
				for _, h := range heals {
					switch {
					case h.Data.Result == "moved":
						moved++
					case h.Data.Hierarchy == "blkio":
						failedPIDs = append(failedPIDs, h.Data.PID)
					default:
						failedOther++
					}
				}
				named := decided != nil && decided.Data.Outcome == "blocked" && len(failedPIDs) > 0 &&
					strings.Contains(decided.Data.Reason, "drain could not heal") && strings.Contains(decided.Data.Reason, "moving it back failed")
				for _, p := range failedPIDs {
					named = named && strings.Contains(decided.Data.Reason, fmt.Sprintf("pid %d ", p))
				}
				r.Expect("drain-names-why", named && moved > 0 && failedOther == 0,
					"%s's last drain decided %s naming the pids left in blkio %v and why: %t; moves that held elsewhere %d, failed elsewhere %d",
					canary, outcomeOf(decided), failedPIDs, named, moved, failedOther)
				levels := f.levels(ctx, order)
				r.Expect("other-cell-untouched", levels[order[1]] == "debug" && indexOf(up, order[1]) < 0, "log level per cell: %v; updated %v", levels, up)
				return nil
			}},
	}}
}
