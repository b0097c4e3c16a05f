package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
)

// Real Garden on the cells (issue 22, "today on a hybrid stemcell"): opt-in,
// because it builds Garden on the host (src/tests/garden/build.sh, minutes
// cold) and deploys a release of its own.
const (
	testReleaseName   = "cellguard-test"
	gardenReleaseName = "cellguard-test-garden"
	gardenOps         = "src/tests/fleet/manifests/garden-ops.yml"

	// Where the garden job of cellguard-test-garden puts things on a cell.
	gclientBin     = "/var/vcap/packages/guardian/bin/gclient"
	gardenSocket   = "/var/vcap/data/garden/garden.sock"
	gardenLogDir   = "/var/vcap/sys/log/garden"
	gardenShimRoot = "/run/containerd/runc/garden" // containerd's runc shim, namespace garden
)

// gardenPackages are the release's packages of build.sh's binaries, by the
// guardian variant each carries: every package's files must be there for
// bosh create-release, whichever job a scenario deploys.
var gardenPackages = []struct {
	name    string
	variant garden.Variant
}{{"guardian", garden.Today}, {"guardian-2020-01", garden.SeedEra}, {"guardian-2026-08", garden.OnV2}}

// buildGardenRelease makes the cellguard-test-garden tarball in the work
// directory: a copy of src/tests/bosh/garden-release with build.sh's
// binaries in its src/<package> (the packages only install them).
func (f *fleet) buildGardenRelease(ctx context.Context, boshBin string) (string, error) {
	t0 := time.Now()
	src := filepath.Join(f.work, "src", "garden-release")
	if _, err := sh(ctx, f.repo, nil, "cp", "-a", filepath.Join(f.repo, "src/tests/bosh/garden-release"), src); err != nil {
		return "", err
	}
	var built []string
	for _, p := range gardenPackages {
		bin := garden.Build(f.t, p.variant)
		dst := filepath.Join(src, "src", p.name)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return "", fmt.Errorf("package %s's source directory: %w", p.name, err)
		}
		files := append(slices.Clone(garden.Binaries), "BUILDINFO")
		if p.variant == garden.OnV2 {
			if err := os.MkdirAll(filepath.Join(dst, "runtime"), 0o755); err != nil {
				return "", fmt.Errorf("package %s's runtime directory: %w", p.name, err)
			}
			for _, b := range garden.RuntimeBinaries {
				files = append(files, filepath.Join("runtime", b))
			}
		}
		for _, b := range files {
			if _, err := sh(ctx, f.repo, nil, "cp", filepath.Join(bin, b), filepath.Join(dst, b)); err != nil {
				return "", fmt.Errorf("package %s: %w", p.name, err)
			}
		}
		built = append(built, fmt.Sprintf("%s: build.sh %s's binaries from %s", p.name, p.variant, bin))
	}
	tarball := filepath.Join(f.work, gardenReleaseName+".tgz")
	if _, err := sh(ctx, src, []string{"HOME=" + filepath.Join(f.work, "home")}, boshBin, "create-release", "--force",
		"--tarball="+tarball, "--non-interactive"); err != nil {
		return "", fmt.Errorf("bosh create-release of %s: %w", gardenReleaseName, err)
	}
	f.story(fmt.Sprintf("   %s (%s; bosh create-release): %s", gardenReleaseName, strings.Join(built, "; "), time.Since(t0).Round(time.Second)))
	return tarball, nil
}

// gardenRun is what the garden scenario learns and passes between its steps.
type gardenRun struct {
	cell       string
	vm         VM
	systemd    int
	handles    []string
	containers map[string]gardenContainer
	before     map[int]map[string]string // every container pid's /proc/<pid>/cgroup before the trigger
	moved      map[string]map[string][2]string
	watchLines int // watch.log's length before the trigger
	scans0     float64
}

// gardenContainer is what containerd's runc recorded for one of Garden's
// containers (state.json), and its processes.
type gardenContainer struct {
	InitPID int
	Paths   map[string]string // controller -> cgroup directory, as runc recorded it
	PIDs    []int
}

// gardenScenario (long for the same reason as deployScenario): real Garden
// (gdn v1.58.0, containerd mode) in garden.service on the shape's cells
// (as garden_ctl writes it: no drop-in of cellguard's), every
// container operation through Garden's API with gclient over bosh ssh; the
// seed-000 trigger, what it moved (measured from /proc, beside a control
// process in the unit that holds monit), a churn of containers, cellguard's
// verdict, Garden's destroy; then seed 002 (garden_seed002_test.go).
func (f *fleet) gardenScenario(ctx context.Context) Scenario {
	g := &gardenRun{handles: []string{"c1", "c2"}, containers: map[string]gardenContainer{}}
	return Scenario{Name: "real Garden today (v1.58.0, garden.service)", Steps: append([]Step{
		{Name: "bosh deploy with real Garden (garden-ops.yml swaps the stand-in for cellguard-test-garden's garden job)",
			Expects: []string{"garden-deploy-succeeds", "guardian-compiled-at-most-once"},
			Do: func(r *Record) error {
				f.gardenJob = gardenReleaseName
				res, err := f.rollOut(ctx, r, addon{Level: "info"}, gardenOps)
				if err != nil {
					return err
				}
				r.Expect("garden-deploy-succeeds", res.ExitCode == 0, "bosh deploy with real Garden exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				var guardian []string
				for _, m := range compileRE.FindAllStringSubmatch(res.Output, -1) {
					if m[1] == "guardian" {
						guardian = append(guardian, m[0])
					}
				}
				r.Expect("guardian-compiled-at-most-once", len(guardian) <= 1 && (f.gardenToStore || len(guardian) == 0),
					"guardian compiled %d times (%s in the compiled cache: %t): %v", len(guardian), gardenReleaseName, !f.gardenToStore, guardian)
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				return f.storeGardenReleases(ctx, r)
			}},
		{Name: "Garden as garden-runc-release v1.58.0 runs it, on every cell",
			Expects: []string{"garden-service-shape", "garden-answers-ping", "addon-on-garden-cells"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				shaped := 0
				for _, c := range order {
					vm, err := f.vm(c)
					if err != nil {
						return err
					}
					show, _ := vm.Exec(ctx, "systemctl", "show", "garden.service", "-p", "ActiveState", "-p", "Delegate", "-p", "KillMode",
						"-p", "TasksMax", "-p", "ControlGroup", "-p", "MainPID", "-p", "DelegateControllers")
					props := keyValues(show)
					pidfile, _ := vm.Exec(ctx, "cat", "/var/vcap/sys/run/garden/garden.pid")
					ver, _ := vm.Exec(ctx, "systemctl", "--version")
					v, _ := systemd.ParseVersion(ver)
					if g.systemd == 0 {
						g.systemd = v
					}
					r.Say("   %s (%s): systemd %d; garden.service %s; monit's pidfile %s", c, vm.CID, v, strings.Join(strings.Fields(show), " "), strings.TrimSpace(pidfile))
					if props["ActiveState"] == "active" && props["Delegate"] == "yes" && props["KillMode"] == "none" && props["TasksMax"] == "infinity" &&
						props["ControlGroup"] == "/system.slice/garden.service" && props["MainPID"] == strings.TrimSpace(pidfile) {
						shaped++
					}
				}
				r.Expect("garden-service-shape", shaped == len(order) && len(order) == 3,
					"%d of %d cells run gdn as garden.service's main process (active, Delegate=yes, KillMode=none, TasksMax=infinity), the pid monit watches", shaped, len(order))
				if len(order) > 0 {
					if vm, err := f.vm(order[0]); err == nil {
						for _, file := range []string{"garden_start.log", "garden_ctl.stdout.log"} {
							out, _ := vm.Exec(ctx, "tail", "-n", "6", gardenLogDir+"/"+file)
							r.Say("   %s %s/%s:", order[0], gardenLogDir, file)
							for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
								r.Say("      %s", l)
							}
						}
						out, _ := vm.Exec(ctx, "head", "-n", "4", gardenLogDir+"/garden.stdout.log")
						r.Say("   %s gdn's own log (garden.stdout.log), first lines:", order[0])
						for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
							r.Say("      %s", l)
						}
					}
				}
				rows, res, err := f.ssh(ctx, "cell", "ls /var/vcap/jobs | tr '\\n' ' '; sudo head -2 /var/vcap/packages/guardian/BUILDINFO | tr '\\n' ' '; echo; sudo "+gclient("ping"))
				if err != nil {
					return err
				}
				pinged, withAddon := 0, 0
				for _, row := range rows {
					lines := strings.Split(strings.TrimSpace(row.Stdout), "\n")
					r.Say("   bosh ssh %s (exit %s): %s", row.Instance, row.ExitCode, strings.Join(lines, " | "))
					if res := gclientResults(row.Stdout); row.ExitCode == "0" && len(res) == 1 && res[0].Op == "ping" && res[0].Error == "" {
						pinged++
					}
					if strings.Contains(" "+row.Stdout+" ", " cellguard ") && strings.Contains(row.Stdout, "garden") {
						withAddon++
					}
				}
				r.Expect("garden-answers-ping", pinged == 3, "gclient ping over bosh ssh answered on %d of 3 cells (bosh exit %d, log %s)", pinged, res.ExitCode, res.Log)
				r.Expect("addon-on-garden-cells", withAddon == 3, "cellguard beside %s's garden job on %d of 3 cells (include.jobs matches garden of %s)", gardenReleaseName, withAddon, gardenReleaseName)
				return nil
			}},
		f.gardenDelegateStep(ctx),
		{Name: "containers through Garden's API (gclient over bosh ssh)", Expects: []string{"containers-created", "containers-below-garden-service"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				g.cell = order[0]
				if g.vm, err = f.vm(g.cell); err != nil {
					return err
				}
				var cmds []string
				for _, h := range g.handles {
					cmds = append(cmds, "sudo "+gclient("create", "-handle", h, "-rootfs", "/var/vcap/data/garden/rootfs"),
						"sudo "+gclient("run", "-handle", h, "--", "sleep", "86400"))
				}
				cmds = append(cmds, "sudo "+gclient("list"))
				rows, _, err := f.ssh(ctx, g.cell, strings.Join(cmds, "; "))
				if err != nil {
					return err
				}
				var results []garden.Result
				for _, row := range rows {
					results = append(results, gclientResults(row.Stdout)...)
				}
				failed := 0
				var listed []string
				for _, res := range results {
					r.Say("   %s: gclient %s %s: %.2fs %s", g.cell, res.Op, res.Handle, res.Seconds, res.Error)
					if res.Error != "" {
						failed++
					}
					if res.Op == "list" {
						listed = res.Handles
					}
				}
				sort.Strings(listed)
				r.Expect("containers-created", len(results) == 2*len(g.handles)+1 && failed == 0 && strings.Join(listed, " ") == strings.Join(g.handles, " "),
					"%d Garden calls, %d failed; Garden lists %v", len(results), failed, listed)
				// gdn setup makes Garden's cgroup below its own in each
				// hierarchy (below garden.service where systemd realized one
				// for it, below the root elsewhere), and runc puts each
				// container there.
				show, err := g.vm.Exec(ctx, "systemctl", "show", "-p", "MainPID", "garden.service")
				if err != nil {
					return err
				}
				gdnPID, _ := strconv.Atoi(keyValues(show)["MainPID"])
				gdnCg, err := procCgroups(ctx, g.vm, []int{gdnPID})
				if err != nil || len(gdnCg[gdnPID]) == 0 {
					return fmt.Errorf("gdn's cgroups (garden.service MainPID %d): %v", gdnPID, err)
				}
				r.Say("   %s: gdn (garden.service's MainPID %d) is in %s", g.cell, gdnPID, describePaths(gdnCg[gdnPID]))
				g.before = map[int]map[string]string{}
				below := 0
				for _, h := range g.handles {
					c, cg, err := f.containerCgroups(ctx, g.vm, h)
					if err != nil {
						return err
					}
					g.containers[h] = c
					ok := len(cg) == len(c.PIDs) && len(c.PIDs) >= 2
					for pid, m := range cg {
						g.before[pid] = m
						for ctrl, p := range m {
							if ctrl != "unified" && !strings.HasPrefix(p, path.Join(gdnCg[gdnPID][ctrl], "garden")+"/") {
								ok = false
							}
						}
					}
					if ok {
						below++
					}
					r.Say("   %s: container %s: init pid %d, pids %v; runc's state.json records %s", g.cell, h, c.InitPID, c.PIDs, describePaths(c.Paths))
					r.Say("      /proc/%d/cgroup: %s", c.InitPID, describePaths(cg[c.InitPID]))
				}
				r.Expect("containers-below-garden-service", below == len(g.handles),
					"%d of %d containers (init and the process Garden ran) sit below gdn's own cgroup's garden/ in every v1 hierarchy", below, len(g.handles))
				return nil
			}},
		{Name: "the seed-000 trigger on the cell, and on other (no Garden) beside a control process", Expects: []string{"trigger-active", "control-moved-on-other", "garden-containers-measured"},
			Do: func(r *Record) error {
				if g.vm.InitPID == "" {
					return fmt.Errorf("no cell with Garden's containers from the step before")
				}
				vm := g.vm
				g.scans0, _ = metric(ctx, vm, "cellguard_scans_total")
				if out, err := vm.Exec(ctx, "wc", "-l", watchLog); err == nil {
					g.watchLines, _ = strconv.Atoi(strings.Fields(out)[0])
				}
				// The control: a process in a sub-cgroup of the unit that holds
				// monit, in every hierarchy, where Garden's containers were
				// before v1.18.0 (and the stand-in's are). On other (same
				// stemcell, no Garden) the trigger must move it, or "nothing
				// moved" on the cell would mean nothing; on the cell it shows
				// what was left to realize in system.slice once garden.service
				// (Delegate=yes) had started.
				others, err := f.laneVMs()
				if err != nil {
					return err
				}
				var other VM
				for _, v := range others {
					if v.Job == "other" {
						other = v
					}
				}
				if other.InitPID == "" {
					return fmt.Errorf("no VM of the other instance group in the CPI's state")
				}
				ctlCell, err := f.startControl(ctx, r, vm, g.cell)
				if err != nil {
					return err
				}
				ctlOther, err := f.startControl(ctx, r, other, other.Name)
				if err != nil {
					return err
				}
				for _, v := range []VM{vm, other} {
					if err := f.fireTrigger(ctx, v, g.systemd); err != nil {
						return err
					}
				}
				active, _ := vm.Exec(ctx, "systemctl", "is-active", "seed000-trigger.service")
				activeOther, _ := other.Exec(ctx, "systemctl", "is-active", "seed000-trigger.service")
				r.Expect("trigger-active", strings.TrimSpace(active) == "active" && strings.TrimSpace(activeOther) == "active",
					"seed000-trigger.service (TriggerFor systemd %d) is %s on %s, %s on %s", g.systemd, strings.TrimSpace(active), g.cell, strings.TrimSpace(activeOther), other.Name)
				time.Sleep(time.Second) // the migration runs in the start job; let it settle (as FireSeed000Trigger)
				movedCell := ctlCell.moved(ctx)
				movedOther := ctlOther.moved(ctx)
				r.Say("   %s: the control moved in %s", g.cell, describeMoved(movedCell))
				r.Expect("control-moved-on-other", len(movedOther) > 0, "on %s (no Garden) the control moved in %s", other.Name, describeMoved(movedOther))
				ctlCell.stop()
				ctlOther.stop()
				var pids []int
				for _, h := range g.handles {
					pids = append(pids, g.containers[h].PIDs...)
				}
				after, err := procCgroups(ctx, vm, pids)
				if err != nil {
					return err
				}
				g.moved = map[string]map[string][2]string{}
				read := 0
				for _, h := range g.handles {
					m := map[string][2]string{}
					for _, pid := range g.containers[h].PIDs {
						if _, ok := after[pid]; ok {
							read++
						}
						for ctrl, mv := range movedBetween(g.before[pid], after[pid]) {
							if _, seen := m[ctrl]; !seen {
								m[ctrl] = mv
							}
						}
					}
					g.moved[h] = m
					r.Say("   %s: Garden's container %s: the trigger moved %s", g.cell, h, describeMoved(m))
				}
				r.Expect("garden-containers-measured", read == len(pids) && len(pids) > 0,
					"systemd %d, garden.service Delegate=yes: /proc/<pid>/cgroup read before and after for %d of %d container processes; moved: %s",
					g.systemd, read, len(pids), describeAllMoved(g.moved))
				return nil
			}},
		f.gardenChurnStep(ctx, g),
		{Name: "cellguard's verdict: validate --phase drain and watch", Expects: []string{"validate-agrees", "watch-agrees"},
			Do: func(r *Record) error {
				vm := g.vm
				anyMoved := false
				for _, m := range g.moved {
					anyMoved = anyMoved || len(m) > 0
				}
				out, verr := validateDrain(ctx, vm)
				blocked := verr != nil && blockedByIntegrity.MatchString(out)
				named := false
				for _, h := range g.handles {
					named = named || strings.Contains(out, "garden/"+h) || strings.Contains(out, h+": pid")
				}
				r.Say("   cellguard validate --phase drain on %s (exit error: %v):", g.cell, verr)
				for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if i < 40 && strings.TrimSpace(l) != "" {
						r.Say("      %s", strings.TrimRight(l, " "))
					}
				}
				if anyMoved {
					r.Expect("validate-agrees", blocked && named, "something moved; validate blocked by cgroup-integrity: %t, naming a container: %t", blocked, named)
				} else {
					r.Expect("validate-agrees", !blocked && !named && !strings.Contains(out, "escaped in"), "nothing moved; validate blocked by cgroup-integrity: %t, names a container: %t", blocked, named)
				}
				// watch: one scan after the trigger (its systemd events start
				// one; the period, 60 s, another), then its count and findings.
				scans := g.scans0
				for i := 0; i < 180 && scans <= g.scans0; i++ {
					time.Sleep(time.Second)
					scans, _ = metric(ctx, vm, "cellguard_scans_total")
				}
				time.Sleep(time.Second) // a scan's confirmation rounds
				escaped, eok := metric(ctx, vm, "cellguard_escaped_processes")
				logText, _ := vm.Exec(ctx, "tail", "-n", "+"+strconv.Itoa(g.watchLines+1), watchLog)
				var findings []string
				for _, l := range strings.Split(logText, "\n") {
					if watchContainerFinding(l) {
						findings = append(findings, l)
					}
				}
				r.Say("   cellguard watch: scans %v -> %v over the trigger and the churn, cellguard_escaped_processes %v (read: %t), %d findings of container checks", g.scans0, scans, escaped, eok, len(findings))
				for i, l := range findings {
					if i < 4 {
						r.Say("      %s", l)
					}
				}
				if anyMoved {
					r.Expect("watch-agrees", scans > g.scans0 && eok && escaped > 0 && len(findings) > 0, "something moved; watch scanned (%t) and counts %v escaped, %d findings", scans > g.scans0, escaped, len(findings))
				} else {
					r.Expect("watch-agrees", scans > g.scans0 && eok && escaped == 0 && len(findings) == 0, "nothing moved; watch scanned (%t) and counts %v escaped, %d findings", scans > g.scans0, escaped, len(findings))
				}
				return nil
			}},
		{Name: "Garden's destroy through its API", Expects: []string{"garden-destroy-ok", "container-processes-gone"},
			Do: func(r *Record) error {
				var cmds []string
				for _, h := range g.handles {
					cmds = append(cmds, "sudo "+gclient("destroy", "-handle", h))
				}
				cmds = append(cmds, "sudo "+gclient("list"))
				rows, _, err := f.ssh(ctx, g.cell, strings.Join(cmds, "; "))
				if err != nil {
					return err
				}
				destroyed := 0
				var left []string
				listed := false
				for _, row := range rows {
					for _, res := range gclientResults(row.Stdout) {
						switch res.Op {
						case "destroy":
							if res.Error == "" {
								destroyed++
								r.Say("   %s: Garden's destroy of %s: ok in %.2fs", g.cell, res.Handle, res.Seconds)
							} else {
								r.Say("   %s: Garden's destroy of %s: error after %.2fs: %s", g.cell, res.Handle, res.Seconds, res.Error)
							}
						case "list":
							listed = res.Error == ""
							left = res.Handles
						}
					}
				}
				r.Expect("garden-destroy-ok", destroyed == len(g.handles) && listed && len(left) == 0,
					"Garden destroyed %d of %d containers; it lists %v afterwards", destroyed, len(g.handles), left)
				var pids []int
				for _, h := range g.handles {
					pids = append(pids, g.containers[h].PIDs...)
				}
				var alive []int
				for i := 0; i < 60; i++ {
					if alive = alivePIDs(ctx, g.vm, pids); len(alive) == 0 {
						break
					}
					time.Sleep(500 * time.Millisecond)
				}
				r.Expect("container-processes-gone", len(alive) == 0, "of the containers' pids %v, alive after the destroy: %v", pids, alive)
				out, _ := g.vm.Exec(ctx, "grep", "-E", `"message":"[^"]*destroy[^"]*"`, gardenLogDir+"/garden.stdout.log")
				var lines []string
				for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
					if strings.Contains(l, `"c1"`) || strings.Contains(l, `"c2"`) {
						lines = append(lines, l)
					}
				}
				r.Say("   gdn's own log of the destroys (garden.stdout.log, %d lines; first and last 4):", len(lines))
				for i, l := range lines {
					if i < 4 || i >= len(lines)-4 {
						r.Say("      %s", l)
					}
				}
				return nil
			}},
	}, f.gardenSeed002Steps(ctx, g)...)}
}

// control is a process below the unit that holds monit (controlScript).
type control struct {
	vm     VM
	pid    int
	before map[string]string
}

// startControl starts the control in vm and tells where it and monit are;
// stop ends it (and the VM's deletion, should the step stop before).
func (f *fleet) startControl(ctx context.Context, r *Record, vm VM, name string) (control, error) {
	out, err := vm.Exec(ctx, "sh", "-ec", controlScript)
	if err != nil {
		return control{}, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lastLine(out)))
	if err != nil {
		return control{}, fmt.Errorf("control process in %s: %q", name, out)
	}
	cg, err := procCgroups(ctx, vm, []int{pid})
	if err != nil {
		return control{}, err
	}
	monit, _ := vm.Exec(ctx, "sh", "-c", `m=$(pidof monit-actual || pidof monit); cat /proc/${m%% *}/cgroup`)
	r.Say("   %s: monit (the unit that holds it) is in %s", name, describePaths(parseProcCgroups("== 1\n" + monit)[1]))
	r.Say("   %s: control pid %d below it: %s", name, pid, describePaths(cg[pid]))
	return control{vm: vm, pid: pid, before: cg[pid]}, nil
}

// moved is where the control moved since it started.
func (c control) moved(ctx context.Context) map[string][2]string {
	cg, err := procCgroups(ctx, c.vm, []int{c.pid})
	if err != nil {
		return nil
	}
	return movedBetween(c.before, cg[c.pid])
}

// stop ends the control and removes its cgroups.
func (c control) stop() {
	c.vm.Exec(context.Background(), "sh", "-c", controlCleanup, "sh", strconv.Itoa(c.pid)) //nolint:errcheck // a cleanup
}

// fireTrigger installs the seed-000 trigger (TriggerFor the VM's systemd),
// starts it, and returns once systemd has made the moves the start causes.
func (f *fleet) fireTrigger(ctx context.Context, vm VM, version int) error {
	b, err := os.ReadFile(filepath.Join(f.repo, "src/tests/bosh/seed000-trigger.service"))
	if err != nil {
		return err
	}
	unit := garden.TriggerFor(string(b), version)
	if err := os.WriteFile(filepath.Join("/proc", vm.InitPID, "root/etc/systemd/system/seed000-trigger.service"), []byte(unit), 0o644); err != nil {
		return fmt.Errorf("install the trigger in %s: %w", vm.Name, err)
	}
	if _, err := vm.Exec(ctx, "systemctl", "daemon-reload"); err != nil {
		return err
	}
	if _, err := vm.Exec(ctx, "systemctl", "restart", "seed000-trigger.service"); err != nil {
		return err
	}
	_, err = vm.Exec(ctx, garden.SettleArgs...)
	return err
}

// storeGardenReleases exports, into the compiled cache, the releases the
// Garden deployment names that the cache did not have.
func (f *fleet) storeGardenReleases(ctx context.Context, r *Record) error {
	var pending []release
	for _, rel := range f.toStore {
		if rel.Name == testReleaseName {
			pending = append(pending, rel) // not in this deployment's manifest
			continue
		}
		if err := f.store(ctx, r, rel); err != nil {
			return err
		}
	}
	f.toStore = pending
	if f.gardenToStore {
		if err := f.store(ctx, r, f.gardenRel); err != nil {
			return err
		}
		f.gardenToStore = false
	}
	return nil
}

func (f *fleet) store(ctx context.Context, r *Record, rel release) error {
	ex, err := f.cache.Store(ctx, f.bosh, f.dep, rel)
	if err != nil {
		return err
	}
	r.Say("   bosh export-release %s/%s %s/%s: %s, kept as %s", rel.Name, rel.Version, f.cache.StemcellOS, f.cache.Stemcell, ex.Took.Round(100*time.Millisecond), f.cache.Path(rel))
	return nil
}

// blockedByIntegrity is validate's verdict line when cgroup-integrity blocks.
var blockedByIntegrity = regexp.MustCompile(`BLOCKED by [^\n]*cgroup-integrity`)

// gclient is a gclient command line against the garden job's socket.
func gclient(op string, args ...string) string { return gclientOf(gclientBin, op, args...) }

// gclientOf is gclient with the client binary bin.
func gclientOf(bin, op string, args ...string) string {
	return strings.Join(append([]string{bin, op, "-network", "unix", "-addr", gardenSocket}, args...), " ")
}

// gclientResults are the JSON lines gclient printed, one per call.
func gclientResults(out string) []garden.Result {
	var rs []garden.Result
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var res garden.Result
		if json.Unmarshal([]byte(l), &res) == nil && res.Op != "" {
			rs = append(rs, res)
		}
	}
	return rs
}

// inspectContainer reads runc's state.json of a Garden container in the VM
// and finds its processes by pid namespace (what Garden runs is dadoo's
// child, not init's).
func (f *fleet) inspectContainer(ctx context.Context, vm VM, handle string) (gardenContainer, error) {
	b, err := vm.Exec(ctx, "cat", gardenShimRoot+"/"+handle+"/state.json")
	if err != nil {
		return gardenContainer{}, err
	}
	var st struct {
		Pid   int               `json:"init_process_pid"`
		Paths map[string]string `json:"cgroup_paths"`
	}
	if err := json.Unmarshal([]byte(b), &st); err != nil || st.Pid <= 0 {
		return gardenContainer{}, fmt.Errorf("decode %s/%s/state.json: pid %d, %v", gardenShimRoot, handle, st.Pid, err)
	}
	out, err := vm.Exec(ctx, "sh", "-c", `ns=$(readlink /proc/$1/ns/pid) && for p in /proc/[0-9]*; do [ "$(readlink $p/ns/pid 2>/dev/null)" = "$ns" ] && echo ${p#/proc/}; done; true`, "sh", strconv.Itoa(st.Pid))
	if err != nil {
		return gardenContainer{}, err
	}
	c := gardenContainer{InitPID: st.Pid, Paths: st.Paths}
	for _, w := range strings.Fields(out) {
		if p, err := strconv.Atoi(w); err == nil {
			c.PIDs = append(c.PIDs, p)
		}
	}
	sort.Ints(c.PIDs)
	return c, nil
}

// containerCgroups is a Garden container as inspectContainer reads it and
// its processes' /proc/<pid>/cgroup as they are now.
func (f *fleet) containerCgroups(ctx context.Context, vm VM, handle string) (gardenContainer, map[int]map[string]string, error) {
	c, err := f.inspectContainer(ctx, vm, handle)
	if err != nil {
		return c, nil, err
	}
	cg, err := procCgroups(ctx, vm, c.PIDs)
	return c, cg, err
}

// procCgroups reads /proc/<pid>/cgroup of pids in the VM (its pid and cgroup
// namespaces); a pid that is gone has no entry.
func procCgroups(ctx context.Context, vm VM, pids []int) (map[int]map[string]string, error) {
	args := []string{"sh", "-c", `for p in "$@"; do c=$(cat /proc/$p/cgroup 2>/dev/null) && printf '== %s\n%s\n' "$p" "$c"; done; true`, "sh"}
	for _, p := range pids {
		args = append(args, strconv.Itoa(p))
	}
	out, err := vm.Exec(ctx, args...)
	if err != nil {
		return nil, err
	}
	return parseProcCgroups(out), nil
}

// parseProcCgroups reads "== PID" headers each followed by that process's
// /proc/<pid>/cgroup: pid -> controllers (as the line names them) -> path.
func parseProcCgroups(out string) map[int]map[string]string {
	m := map[int]map[string]string{}
	var cur map[string]string
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(l, "== "); ok {
			cur = nil
			if p, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
				cur = map[string]string{}
				m[p] = cur
			}
			continue
		}
		parts := strings.SplitN(l, ":", 3)
		if cur == nil || len(parts) != 3 {
			continue
		}
		key := parts[1]
		if key == "" {
			key = "unified"
		}
		cur[key] = parts[2]
	}
	return m
}

// movedBetween is every hierarchy whose path differs between before and
// after: hierarchy -> [before, after].
func movedBetween(before, after map[string]string) map[string][2]string {
	moved := map[string][2]string{}
	for k, b := range before {
		if a, ok := after[k]; ok && a != b {
			moved[k] = [2]string{b, a}
		}
	}
	return moved
}

func describePaths(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+":"+m[k])
	}
	return strings.Join(parts, " ")
}

func describeMoved(m map[string][2]string) string {
	if len(m) == 0 {
		return "nothing"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s (%s -> %s)", k, m[k][0], m[k][1]))
	}
	return strings.Join(parts, ", ")
}

func describeAllMoved(m map[string]map[string][2]string) string {
	var parts []string
	for _, h := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, h+": "+describeMoved(m[h]))
	}
	return strings.Join(parts, "; ")
}

// alivePIDs are those of pids that still exist in the VM and are not zombies.
func alivePIDs(ctx context.Context, vm VM, pids []int) []int {
	args := []string{"sh", "-c", `for p in "$@"; do s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null) && [ "$s" != Z ] && echo $p; done; true`, "sh"}
	for _, p := range pids {
		args = append(args, strconv.Itoa(p))
	}
	out, _ := vm.Exec(ctx, args...)
	var alive []int
	for _, w := range strings.Fields(out) {
		if p, err := strconv.Atoi(w); err == nil {
			alive = append(alive, p)
		}
	}
	return alive
}

// keyValues reads systemctl show's KEY=VALUE lines.
func keyValues(s string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			m[k] = v
		}
	}
	return m
}

// controlScript starts a sleep and puts it in a sub-cgroup fleet-control of
// the cgroups of the unit that holds monit (monit-actual on jammy), in every
// hierarchy, and prints its pid last.
const controlScript = `
m=$(pidof monit-actual || pidof monit)
m=${m%% *}
sleep 86400 </dev/null >/dev/null 2>&1 &
pid=$!
while IFS=: read -r _ ctrls path; do
  case $ctrls in
    "") dir=/sys/fs/cgroup/unified$path ;;
    name=systemd) dir=/sys/fs/cgroup/systemd$path ;;
    *) dir=/sys/fs/cgroup/$ctrls$path ;;
  esac
  [ -d "$dir" ] || continue
  mkdir -p "$dir/fleet-control"
  # cpuset's new cgroup has no cpus or mems, so it takes no process: skipped
  echo "$pid" >"$dir/fleet-control/cgroup.procs" 2>/dev/null || rmdir "$dir/fleet-control" 2>/dev/null || true
done </proc/$m/cgroup
echo "$pid"
`

// controlCleanup ends the control process and removes its cgroups.
const controlCleanup = `kill -KILL "$1" 2>/dev/null; sleep 0.5; find /sys/fs/cgroup -mindepth 1 -type d -name fleet-control -exec rmdir {} + 2>/dev/null; true`
