package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
	"golang.org/x/sys/unix"
)

// Seed 000 as it happened (issue 22), opt-in with
// CELLGUARD_FLEET_SCENARIOS=garden-seed on the xenial shape: Garden of
// 2020-01 started by monit directly (cellguard-test-garden's garden-seed
// job), every container operation through Garden's API with the 2020-01
// gclient over bosh ssh.
const (
	gardenSeedOps      = "src/tests/fleet/manifests/garden-seed-ops.yml"
	gardenSeedAddonOps = "src/tests/fleet/manifests/garden-seed-addon-ops.yml"
	seedGclientBin     = "/var/vcap/packages/guardian-2020-01/bin/gclient"
	seedGardenPidfile  = "/var/vcap/sys/run/garden-seed/garden.pid"
	seedGardenLogDir   = "/var/vcap/sys/log/garden-seed"

	// seedKillTimeout is Garden's own error when its destroy gives up: the
	// 2020-01 guardian waits about two minutes for containerd's kill --all
	// (rundmc/runcontainerd/nerd/nerd.go of 28ddcdfa).
	seedKillTimeout = "timed out waiting for container kill"
	// seedWatchBound is how soon after the trigger's start was asked for
	// watch must log the escape: it scans on every systemd job, and make
	// cell measured 0.5-0.6 s; the bound leaves room for this shared
	// 2-core machine's load, and is still well under watch's 60 s period.
	seedWatchBound = 2 * time.Second
)

// seedGclient is a command line of the 2020-01 gclient against the
// garden-seed job's socket.
func seedGclient(op string, args ...string) string {
	return strings.Join(append([]string{seedGclientBin, op, "-network", "unix", "-addr", gardenSocket}, args...), " ")
}

// seedRun is what the seed scenario learns and passes between its steps.
type seedRun struct {
	cell       string // the second cell in the director's update order
	vm         VM
	order      []string
	containers map[string]gardenContainer
	before     map[int]map[string]string
	moved      map[string]map[string][2]string
}

// gardenSeedScenario is issue 22's "seed 000 as it happened" on the
// director's xenial cells. Long for the same reason as gardenScenario: one
// value holding its steps and expectations.
func (f *fleet) gardenSeedScenario(ctx context.Context) Scenario {
	g := &seedRun{containers: map[string]gardenContainer{}}
	handles := []string{"c1", "c2"}
	return Scenario{Name: "seed 000 as it happened (Garden 2020-01 started by monit, systemd 229)", Steps: []Step{
		{Name: "bosh deploy with the seed's Garden (garden-seed-ops.yml), nothing protected",
			Expects: []string{"seed-deploy-succeeds", "seed-garden-in-monit-unit", "seed-garden-answers-ping"},
			Do: func(r *Record) error {
				if err := f.seedGarden(); err != nil {
					return err
				}
				res, err := f.rollOut(ctx, r, addon{Level: "info"}, gardenSeedOps)
				if err != nil {
					return err
				}
				r.Expect("seed-deploy-succeeds", res.ExitCode == 0, "bosh deploy with garden-seed exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				if err := f.storeGardenReleases(ctx, r); err != nil {
					return err
				}
				if g.order, err = f.cellOrder(ctx); err != nil {
					return err
				}
				inUnit := 0
				for _, c := range g.order {
					vm, err := f.vm(c)
					if err != nil {
						return err
					}
					// gdn (monit's pidfile) and monit in the same unit, and
					// no garden.service: the shape before v1.18.0.
					out, err := vm.Exec(ctx, "sh", "-c", `g=$(cat `+seedGardenPidfile+`); m=$(pidof monit-actual || pidof monit); m=${m%% *}
echo "gdn=$g $(grep name=systemd /proc/$g/cgroup)"; echo "monit=$m $(grep name=systemd /proc/$m/cgroup)"
systemctl show garden.service -p LoadState`)
					if err != nil {
						return fmt.Errorf("where Garden runs on %s: %w", c, err)
					}
					r.Say("   %s: %s", c, strings.Join(strings.Fields(out), " "))
					unit := "/system.slice/" + f.shape.supervisor
					lines := strings.Split(strings.TrimSpace(out), "\n")
					if len(lines) == 3 && strings.HasSuffix(lines[0], ":"+unit) && strings.HasSuffix(lines[1], ":"+unit) && lines[2] == "LoadState=not-found" {
						inUnit++
					}
				}
				r.Expect("seed-garden-in-monit-unit", inUnit == len(g.order) && len(g.order) == 3,
					"on %d of %d cells gdn runs in monit's unit (%s) and there is no garden.service", inUnit, len(g.order), f.shape.supervisor)
				if len(g.order) > 0 {
					if vm, err := f.vm(g.order[0]); err == nil {
						out, _ := vm.Exec(ctx, "tail", "-n", "4", seedGardenLogDir+"/garden_start.log")
						r.Say("   %s %s/garden_start.log:", g.order[0], seedGardenLogDir)
						for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
							r.Say("      %s", l)
						}
					}
				}
				rows, res, err := f.ssh(ctx, "cell", "sudo head -2 /var/vcap/packages/guardian-2020-01/BUILDINFO | tr '\\n' ' '; echo; sudo "+seedGclient("ping"))
				if err != nil {
					return err
				}
				pinged := 0
				for _, row := range rows {
					r.Say("   bosh ssh %s (exit %s): %s", row.Instance, row.ExitCode, strings.Join(strings.Split(strings.TrimSpace(row.Stdout), "\n"), " | "))
					if res := gclientResults(row.Stdout); row.ExitCode == "0" && len(res) == 1 && res[0].Op == "ping" && res[0].Error == "" {
						pinged++
					}
				}
				r.Expect("seed-garden-answers-ping", pinged == 3, "the 2020-01 gclient's ping over bosh ssh answered on %d of 3 cells (bosh exit %d, log %s)", pinged, res.ExitCode, res.Log)
				return nil
			}},
		{Name: "containers through the seed Garden's API (gclient over bosh ssh)", Expects: []string{"seed-containers-created", "seed-containers-where-runc-recorded"},
			Do: func(r *Record) error {
				if len(g.order) < 2 {
					return fmt.Errorf("want 3 cells in the update order, have %v", g.order)
				}
				// The second cell: the canary's update then shows the job
				// updates where nothing escaped, and the rollout stops here.
				g.cell = g.order[1]
				var err error
				if g.vm, err = f.vm(g.cell); err != nil {
					return err
				}
				results, err := f.makeSeedContainers(ctx, r, g.cell, handles)
				if err != nil {
					return err
				}
				r.Expect("seed-containers-created", results == nil, "Garden's create and run of %v on %s: %v", handles, g.cell, results)
				g.before = map[int]map[string]string{}
				where := 0
				for _, h := range handles {
					c, cg, err := f.containerCgroups(ctx, g.vm, h)
					if err != nil {
						return err
					}
					g.containers[h] = c
					ok := len(c.PIDs) >= 2 && len(cg) == len(c.PIDs)
					for pid, m := range cg {
						g.before[pid] = m
						ok = ok && len(outsideRecorded(m, c.Paths)) == 0
					}
					if ok {
						where++
					}
					r.Say("   %s: container %s: init pid %d, pids %v; runc's state.json records %s", g.cell, h, c.InitPID, c.PIDs, describePaths(c.Paths))
					r.Say("      /proc/%d/cgroup before the trigger: %s", c.InitPID, describePaths(cg[c.InitPID]))
				}
				r.Expect("seed-containers-where-runc-recorded", where == len(handles),
					"before the trigger, %d of %d containers' processes are in every cgroup runc recorded", where, len(handles))
				return nil
			}},
		{Name: "the seed-000 trigger: what moved, and cellguard watch", Expects: []string{"seed-trigger-moved-devices", "seed-watch-names-escape", "seed-validate-blocks"},
			Do: func(r *Record) error {
				if g.vm.InitPID == "" {
					return fmt.Errorf("no cell with Garden's containers from the step before")
				}
				if !watchReady(ctx, g.vm) {
					return fmt.Errorf("watch on %s never scanned with 0 escapes", g.cell)
				}
				lines0 := len(watchLines(ctx, g.vm, "finding"))
				fired := time.Now()
				if err := f.fireTrigger(ctx, g.vm, f.shape.systemd); err != nil {
					return err
				}
				r.Say("   %s: seed000-trigger.service (TriggerFor systemd %d) start asked for at %s", g.cell, f.shape.systemd, fired.UTC().Format(time.RFC3339Nano))
				time.Sleep(time.Second) // the migration runs in the start job (as FireSeed000Trigger)
				var err error
				if g.moved, err = f.seedMoved(ctx, r, g); err != nil {
					return err
				}
				devices := 0
				for _, h := range handles {
					if _, ok := g.moved[h]["devices"]; ok {
						devices++
					}
				}
				r.Expect("seed-trigger-moved-devices", devices == len(handles),
					"systemd 229, gdn in %s without Delegate=: devices moved for %d of %d containers (what Garden's destroy hangs on); moved: %s", f.shape.supervisor, devices, len(handles), describeAllMoved(g.moved))
				at, line := time.Time{}, ""
				for i := 0; i < 30 && at.IsZero(); i++ {
					at, line = firstFinding(since(watchLines(ctx, g.vm, "finding"), lines0), "garden/")
					if at.IsZero() {
						time.Sleep(time.Second)
					}
				}
				escaped, eok := metric(ctx, g.vm, "cellguard_escaped_processes")
				latency := at.Sub(fired)
				r.Say("   cellguard watch's first finding naming Garden's containers: %s", line)
				if at.IsZero() {
					// No finding: what watch did say, and whether it runs.
					out, _ := g.vm.Exec(ctx, "sh", "-c", "tail -n 30 "+watchLog+"; ps -eo pid,lstart,args | grep '[c]ellguard watch'")
					r.Say("   watch's log tail and process:")
					for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
						r.Say("      %s", l)
					}
				}
				if active, err := activeSince(ctx, g.vm, "seed000-trigger.service"); err == nil && !at.IsZero() {
					r.Say("   seed000-trigger.service became active at %s; watch's first finding %.2fs after that", active.UTC().Format(time.RFC3339Nano), at.Sub(active).Seconds())
				} else if err != nil {
					r.Say("   when seed000-trigger.service became active: %v", err)
				}
				r.Expect("seed-watch-names-escape", !at.IsZero() && latency >= 0 && latency <= seedWatchBound && eok && escaped > 0,
					"watch logged the escape %.2fs after the trigger's start was asked for (bound %s); cellguard_escaped_processes %v (read: %t)", latency.Seconds(), seedWatchBound, escaped, eok)
				out, verr := validateDrain(ctx, g.vm)
				blocked := verr != nil && blockedByIntegrity.MatchString(out)
				named := strings.Contains(out, "garden/c1") || strings.Contains(out, "c1: pid")
				r.Say("   cellguard validate --phase drain on %s: %s", g.cell, verdictLine(out))
				r.Expect("seed-validate-blocks", blocked && named, "validate --phase drain blocked by cgroup-integrity: %t, naming c1: %t", blocked, named)
				return nil
			}},
		{Name: "Garden's destroy through its API", Expects: []string{"seed-destroy-times-out", "seed-gdn-logs-timeout", "seed-container-left"},
			Do: func(r *Record) error {
				// c1 only: each destroy takes Garden's two minutes.
				destroy, list, err := f.seedDestroy(ctx, g.cell, "c1")
				if err != nil {
					return err
				}
				r.Say("   %s: Garden's destroy of c1 through its API: after %.1fs, error: %s", g.cell, destroy.Seconds, destroy.Error)
				r.Expect("seed-destroy-times-out", strings.Contains(destroy.Error, seedKillTimeout) && destroy.Seconds >= 100 && destroy.Seconds <= 200,
					"destroy answered after %.1fs with %q (want Garden's %q after about 2 minutes)", destroy.Seconds, destroy.Error, seedKillTimeout)
				out, _ := g.vm.Exec(ctx, "grep", "-F", seedKillTimeout, seedGardenLogDir+"/garden.stdout.log")
				var logged []string
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if strings.Contains(l, `"c1"`) || strings.Contains(l, "c1") {
						logged = append(logged, l)
					}
				}
				r.Say("   gdn's own log (%s/garden.stdout.log), its lines with %q:", seedGardenLogDir, seedKillTimeout)
				for i, l := range logged {
					if i < 4 {
						r.Say("      %s", l)
					}
				}
				r.Expect("seed-gdn-logs-timeout", len(logged) > 0, "gdn logged %d lines with %q for c1", len(logged), seedKillTimeout)
				alive := alivePIDs(ctx, g.vm, g.containers["c1"].PIDs)
				r.Expect("seed-container-left", slices.Contains(list.Handles, "c1") && len(alive) > 0,
					"after the failed destroy Garden lists %v and c1's processes %v are alive", list.Handles, alive)
				return nil
			}},
		{Name: "the next bosh deploy (log level debug) stops at this cell's drain",
			Expects: []string{"seed-next-deploy-blocked", "seed-stopped-at-cell-drain", "seed-canary-updated"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "debug"}, gardenSeedOps)
				if err != nil {
					return err
				}
				up := updated(res.Output)
				last := ""
				if len(up) > 0 {
					last = up[len(up)-1]
				}
				drainErr := strings.Contains(strings.ToLower(strings.Join(taskLines(res.Output), "\n")), "drain")
				r.Expect("seed-next-deploy-blocked", res.ExitCode != 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				r.Expect("seed-stopped-at-cell-drain", last == g.cell && drainErr, "the task updated %v and stopped at %s (Garden's cell: %s) with a drain error: %t", up, last, g.cell, drainErr)
				done := map[string]bool{}
				for _, m := range completedRE.FindAllStringSubmatch(res.Output, -1) {
					done[m[1]] = true
				}
				r.Expect("seed-canary-updated", done[g.order[0]] && f.logLevel(ctx, g.order[0]) == "debug" && f.logLevel(ctx, g.cell) == "info",
					"the canary %s finished its update (%t) and runs log level %s; %s still runs %s", g.order[0], done[g.order[0]], f.logLevel(ctx, g.order[0]), g.cell, f.logLevel(ctx, g.cell))
				if out, err := g.vm.Exec(ctx, "tail", "-n", "12", "/var/vcap/sys/log/cellguard/drain.log"); err == nil {
					r.Say("   %s /var/vcap/sys/log/cellguard/drain.log, last lines:", g.cell)
					for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
						r.Say("      %s", l)
					}
				}
				return nil
			}},
	}}
}

// seedGarden makes this lane's cells run the seed's Garden (garden-seed,
// which the addon then includes), on systemd 229 alone.
func (f *fleet) seedGarden() error {
	if f.shape.systemd != 229 {
		return fmt.Errorf("seed 000 as it happened is systemd 229's (xenial); shape %s has %d", f.shape.name, f.shape.systemd)
	}
	f.gardenJob, f.seedJob = gardenReleaseName, true
	return nil
}

// gardenSeedProtectedScenario is the seed's Garden with
// cellguard.supervisor.protect, in a lane of its own: fresh VMs, because once
// systemd realized a controller for the slice a second trigger moves
// nothing, protected or not.
func (f *fleet) gardenSeedProtectedScenario(ctx context.Context) Scenario {
	return Scenario{Name: "seed 000 protected (cellguard.supervisor.protect, the same Garden and trigger)", Steps: []Step{
		{Name: "with cellguard.supervisor.protect on fresh VMs: nothing moves, the destroy takes seconds",
			Expects: []string{"seed-protect-deployed", "seed-supervisor-delegated", "seed-protected-where-runc-recorded", "seed-protected-nothing-moved", "seed-protected-watch-quiet", "seed-protected-destroy-seconds"},
			Do: func(r *Record) error {
				if err := f.seedGarden(); err != nil {
					return err
				}
				if err := f.rollOutEverywhere(ctx, r, "seed-protect-deployed", addon{Level: "info", Protect: true}, gardenSeedOps); err != nil {
					return err
				}
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				p := &seedRun{cell: order[1], order: order, containers: map[string]gardenContainer{}}
				if p.vm, err = f.vm(p.cell); err != nil {
					return err
				}
				show, _ := p.vm.Exec(ctx, "systemctl", "show", f.shape.supervisor, "-p", "Delegate")
				r.Say("   %s: systemctl show %s: %s", p.cell, f.shape.supervisor, strings.TrimSpace(show))
				r.Expect("seed-supervisor-delegated", strings.TrimSpace(show) == "Delegate=yes", "%s on %s: %s", f.shape.supervisor, p.cell, strings.TrimSpace(show))
				failed, err := f.makeSeedContainers(ctx, r, p.cell, []string{"c1"})
				if err != nil {
					return err
				}
				if failed != nil {
					return fmt.Errorf("Garden's create and run on %s: %v", p.cell, failed)
				}
				c, before, err := f.containerCgroups(ctx, p.vm, "c1")
				if err != nil {
					return err
				}
				p.containers["c1"], p.before = c, before
				inPlace := len(c.PIDs) >= 2 && len(p.before) == len(c.PIDs)
				for _, m := range p.before {
					inPlace = inPlace && len(outsideRecorded(m, c.Paths)) == 0
				}
				r.Say("   %s: container c1: init pid %d, pids %v; runc's state.json records %s", p.cell, c.InitPID, c.PIDs, describePaths(c.Paths))
				r.Say("      /proc/%d/cgroup before the trigger: %s", c.InitPID, describePaths(p.before[c.InitPID]))
				r.Expect("seed-protected-where-runc-recorded", inPlace, "before the trigger c1's processes are in every cgroup runc recorded: %t", inPlace)
				if !watchReady(ctx, p.vm) {
					return fmt.Errorf("watch on %s never scanned with 0 escapes", p.cell)
				}
				lines0 := len(watchLines(ctx, p.vm, "finding"))
				if err := f.fireTrigger(ctx, p.vm, f.shape.systemd); err != nil {
					return err
				}
				time.Sleep(3 * time.Second) // the migration, and watch's scan after the trigger's job
				if p.moved, err = f.seedMoved(ctx, r, p); err != nil {
					return err
				}
				r.Expect("seed-protected-nothing-moved", len(p.moved["c1"]) == 0 && len(p.before) == len(c.PIDs) && len(c.PIDs) >= 2,
					"with %s delegated the trigger moved: %s (of pids %v)", f.shape.supervisor, describeAllMoved(p.moved), c.PIDs)
				escaped, eok := metric(ctx, p.vm, "cellguard_escaped_processes")
				at, _ := firstFinding(since(watchLines(ctx, p.vm, "finding"), lines0), "garden/")
				r.Expect("seed-protected-watch-quiet", eok && escaped == 0 && at.IsZero(), "cellguard_escaped_processes %v (read: %t), a finding naming Garden's containers: %t", escaped, eok, !at.IsZero())
				destroy, list, err := f.seedDestroy(ctx, p.cell, "c1")
				if err != nil {
					return err
				}
				var alive []int
				for i := 0; i < 20; i++ {
					if alive = alivePIDs(ctx, p.vm, c.PIDs); len(alive) == 0 {
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
				r.Say("   %s: Garden's destroy of c1 through its API: after %.2fs, error: %q; Garden lists %v; alive of %v: %v", p.cell, destroy.Seconds, destroy.Error, list.Handles, c.PIDs, alive)
				r.Expect("seed-protected-destroy-seconds", destroy.Op == "destroy" && destroy.Error == "" && destroy.Seconds < 30 && len(list.Handles) == 0 && len(alive) == 0,
					"destroy: %.2fs, error %q; listed afterwards %v; processes alive %v", destroy.Seconds, destroy.Error, list.Handles, alive)
				return nil
			}},
	}}
}

// makeSeedContainers creates each handle through the seed Garden's API over
// bosh ssh and runs a sleep in it; it returns the calls that failed (nil
// when none did).
func (f *fleet) makeSeedContainers(ctx context.Context, r *Record, cell string, handles []string) ([]string, error) {
	var cmds []string
	for _, h := range handles {
		cmds = append(cmds, "sudo "+seedGclient("create", "-handle", h, "-rootfs", "/var/vcap/data/garden/rootfs"),
			"sudo "+seedGclient("run", "-handle", h, "--", "sleep", "86400"))
	}
	rows, _, err := f.ssh(ctx, cell, strings.Join(cmds, "; "))
	if err != nil {
		return nil, fmt.Errorf("containers on %s over bosh ssh: %w", cell, err)
	}
	var failed []string
	n := 0
	for _, row := range rows {
		for _, res := range gclientResults(row.Stdout) {
			n++
			r.Say("   %s: gclient %s %s: %.2fs %s", cell, res.Op, res.Handle, res.Seconds, res.Error)
			if res.Error != "" {
				failed = append(failed, res.Op+" "+res.Handle+": "+res.Error)
			}
		}
	}
	if n != 2*len(handles) {
		failed = append(failed, fmt.Sprintf("%d of %d Garden calls answered", n, 2*len(handles)))
	}
	return failed, nil
}

// seedMoved reads the containers' /proc/<pid>/cgroup again and tells, per
// container, what moved since g.before.
func (f *fleet) seedMoved(ctx context.Context, r *Record, g *seedRun) (map[string]map[string][2]string, error) {
	var pids []int
	for _, c := range g.containers {
		pids = append(pids, c.PIDs...)
	}
	after, err := procCgroups(ctx, g.vm, pids)
	if err != nil {
		return nil, fmt.Errorf("container processes' cgroups after the trigger on %s: %w", g.cell, err)
	}
	moved := map[string]map[string][2]string{}
	for h, c := range g.containers {
		m := map[string][2]string{}
		for _, pid := range c.PIDs {
			for ctrl, mv := range movedBetween(g.before[pid], after[pid]) {
				if _, seen := m[ctrl]; !seen {
					m[ctrl] = mv
				}
			}
		}
		moved[h] = m
		r.Say("   %s: container %s: /proc/%d/cgroup after the trigger: %s", g.cell, h, c.InitPID, describePaths(after[c.InitPID]))
		r.Say("      the trigger moved %s", describeMoved(m))
	}
	return moved, nil
}

// outsideRecorded are the hierarchies of a /proc/<pid>/cgroup (as
// parseProcCgroups reads it) whose path is not where runc recorded the
// container (state.json's cgroup_paths: controller -> directory, which ends
// in the process's path within that hierarchy).
func outsideRecorded(proc, recorded map[string]string) []string {
	var out []string
	for key, p := range proc {
		for _, ctrl := range strings.Split(key, ",") {
			if dir, ok := recorded[ctrl]; ok && !strings.HasSuffix(dir, p) {
				out = append(out, key)
				break
			}
		}
	}
	return out
}

// firstFinding is the time and text of the first of watch's log lines that
// names subject, zero when none does.
func firstFinding(lines []string, subject string) (time.Time, string) {
	for _, l := range lines {
		var e struct {
			Timestamp string `json:"timestamp"`
		}
		if !strings.Contains(l, subject) || json.Unmarshal([]byte(l), &e) != nil {
			continue
		}
		if at := lagerTime(e.Timestamp); !at.IsZero() {
			return at, l
		}
	}
	return time.Time{}, ""
}

// lagerTime reads a lager timestamp in either of cellguard.log.time_format's
// forms: RFC3339 or unix-epoch ("seconds.nanoseconds"); zero when neither.
func lagerTime(s string) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	sec, frac, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	ns := int64(0)
	if frac != "" {
		f, err := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
		if err != nil {
			return time.Time{}
		}
		ns = f
	}
	return time.Unix(n, ns)
}

// activeSince is when unit in vm last became active, from systemd's
// ActiveEnterTimestampMonotonic: systemd 229 prints the wall-clock form in
// whole seconds only, and the VM shares the host's monotonic clock.
func activeSince(ctx context.Context, vm VM, unit string) (time.Time, error) {
	out, err := vm.Exec(ctx, "systemctl", "show", unit, "-p", "ActiveEnterTimestampMonotonic")
	if err != nil {
		return time.Time{}, err
	}
	us, err := strconv.ParseInt(keyValues(out)["ActiveEnterTimestampMonotonic"], 10, 64)
	if err != nil || us == 0 {
		return time.Time{}, fmt.Errorf("%s's ActiveEnterTimestampMonotonic %q: %v", unit, strings.TrimSpace(out), err)
	}
	var mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return time.Time{}, fmt.Errorf("read the monotonic clock: %w", err)
	}
	now := time.Now()
	return now.Add(-(time.Duration(mono.Nano()) - time.Duration(us)*time.Microsecond)), nil
}

// since are lines after the first n (all of them when fewer: a rotated log).
func since(lines []string, n int) []string {
	if n > len(lines) {
		return lines
	}
	return lines[n:]
}

// TestSeedHelpers: the readings the seed scenario's expectations rest on.
func TestSeedHelpers(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{"2026-12-03T12:30:01.250000000Z", time.Date(2026, 12, 3, 12, 30, 1, 250000000, time.UTC)},
		{"1764765001.25", time.Unix(1764765001, 250000000)},
		{"1764765001", time.Unix(1764765001, 0)},
		{"soon", time.Time{}},
	} {
		if got := lagerTime(tc.in); !got.Equal(tc.want) {
			t.Errorf("lagerTime(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	recorded := map[string]string{"devices": "/sys/fs/cgroup/devices/garden/c1", "cpu": "/sys/fs/cgroup/cpu,cpuacct/garden/c1", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct/garden/c1"}
	if got := outsideRecorded(map[string]string{"devices": "/garden/c1", "cpu,cpuacct": "/garden/c1", "name=systemd": "/system.slice/runit.service"}, recorded); len(got) != 0 {
		t.Errorf("in place: outsideRecorded = %v, want none", got)
	}
	if got := outsideRecorded(map[string]string{"devices": "/system.slice/runit.service", "cpu,cpuacct": "/garden/c1"}, recorded); !slices.Equal(got, []string{"devices"}) {
		t.Errorf("devices moved: outsideRecorded = %v, want [devices]", got)
	}
}

// seedDestroy destroys a container through the seed's Garden API over bosh
// ssh and lists what Garden still knows after it: each step's result.
func (f *fleet) seedDestroy(ctx context.Context, cell, handle string) (destroy, list garden.Result, err error) {
	rows, _, err := f.ssh(ctx, cell, "sudo "+seedGclient("destroy", "-handle", handle)+"; sudo "+seedGclient("list"))
	if err != nil {
		return destroy, list, err
	}
	for _, row := range rows {
		for _, res := range gclientResults(row.Stdout) {
			switch res.Op {
			case "destroy":
				destroy = res
			case "list":
				list = res
			}
		}
	}
	return destroy, list, nil
}
