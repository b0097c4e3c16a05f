package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/garden"
)

// Issue 37 through the director: Garden as noble cells run it today
// (guardian c2d9348 with the runc and containerd its go.mod pins, package
// guardian-2026-08 of cellguard-test-garden) on a QEMU VM that boots
// Ubuntu's 6.8 kernel on cgroup v2, every hand over bosh ssh. Where each
// container lands was measured in one VM by TestNobleGardenToday
// (src/tests/qemu/README.md); here it is a BOSH cell with cellguard as an
// addon: containers and peas with validate and watch quiet, a daemon-reload
// that strips nothing, a pids limit lost by hand and an escaped pea, each named,
// and the next deploy's drain healing the escape.

const (
	// gardenV2Ops runs the garden job on guardian-2026-08 (on top of
	// gardenOps).
	gardenV2Ops     = "src/tests/fleet/manifests/garden-v2-ops.yml"
	gardenV2Package = "guardian-2026-08"
	// gardenV2Runc is the runc Garden runs there, which the addon names
	// (validator.runtime_binaries.runc): its children are runc's own while
	// they join a container (runcvouch.go), and its version is judged.
	gardenV2Runc = "/var/vcap/packages/" + gardenV2Package + "/runtime/runc"
	// Every container of the scenario asks for these (gclient's flags).
	v2MemoryBytes = "67108864" // -memory-mb 64
	v2Pids        = "64"
)

// v2Checks are the checks that judge containers on v2: a finding of theirs
// where nothing was provoked is a false positive.
var v2Checks = append(slices.Clone(containerChecks), "limits-intact", "cgroup-topology", "delegation-audit")

// gclientV2 is a gclient command line of guardian-2026-08's gclient.
func gclientV2(op string, args ...string) string {
	return gclientOf("/var/vcap/packages/"+gardenV2Package+"/bin/gclient", op, args...)
}

// v2Limits are the gclient flags of every container here.
var v2Limits = []string{"-memory-mb", "64", "-cpu-weight", "100", "-pids", v2Pids}

// v2Placement is where one runc container of Garden's is (state.json and
// the init's /proc), and the limit files of the cgroup it is in.
type v2Placement struct {
	ID, Recorded, At string
	PID              int
	PIDNS            string // its pid namespace's inode
	HostPIDNS        bool
	Limits           map[string]string // memory.max, pids.max, cpu.weight, io.weight: value or ABSENT
}

// v2PlacementScript prints a placement line per container in Garden's runc
// root: id|init pid|cgroup_paths[""] (runc 1.5 records it below
// /sys/fs/cgroup)|its 0:: line|its pid namespace|the host's|limits.
const v2PlacementScript = `cd ` + gardenShimRoot + ` 2>/dev/null || exit 0
for id in *; do
  [ -f "$id/state.json" ] || continue
  s=$(cat "$id/state.json")
  pid=$(printf '%s' "$s" | grep -o '"init_process_pid":[0-9]*' | cut -d: -f2)
  rec=$(printf '%s' "$s" | grep -o '"cgroup_paths":{"":"[^"]*"' | sed 's/.*"":"//; s/"$//')
  at=$(sed -n 's/^0:://p' /proc/$pid/cgroup 2>/dev/null)
  ns=$(readlink /proc/$pid/ns/pid | tr -dc 0-9)
  lim=""
  for x in memory.max pids.max cpu.weight io.weight; do
    f=/sys/fs/cgroup$at/$x
    if [ -n "$at" ] && [ -e "$f" ]; then lim="$lim $x=$(head -1 "$f" | tr ' ' _)"; else lim="$lim $x=ABSENT"; fi
  done
  echo "placement|$id|$pid|${rec#/sys/fs/cgroup}|$at|$ns|$(readlink /proc/1/ns/pid | tr -dc 0-9)|${lim# }"
done`

// parsePlacements reads v2PlacementScript's lines, by container id.
func parsePlacements(out string) map[string]v2Placement {
	ps := map[string]v2Placement{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) != 8 || f[0] != "placement" {
			continue
		}
		pid, _ := strconv.Atoi(f[2])
		p := v2Placement{ID: f[1], PID: pid, Recorded: f[3], At: f[4], PIDNS: f[5], HostPIDNS: f[5] != "" && f[5] == f[6],
			Limits: keyValues(strings.ReplaceAll(f[7], " ", "\n"))}
		ps[p.ID] = p
	}
	return ps
}

func (p v2Placement) String() string {
	return fmt.Sprintf("%s: init %d at %s (state.json records %s; pid namespace %s) %s", p.ID, p.PID, p.At, p.Recorded,
		p.PIDNS+map[bool]string{true: ", the host's", false: ""}[p.HostPIDNS], describeLimits(p.Limits))
}

func describeLimits(m map[string]string) string {
	var parts []string
	for _, k := range []string{"memory.max", "pids.max", "cpu.weight", "io.weight"} {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}

// gardenV2 is what the garden_v2 scenario learns and passes between steps.
type gardenV2 struct {
	cell       string
	watchLines int // watch.log's length when the containers were made
	pea        v2Placement
}

// onCell runs script as root on cell over bosh ssh and returns its stdout;
// a non-zero exit is the script's to report (its output says).
func (f *fleet) onCell(ctx context.Context, cell, script string) (string, error) {
	rows, res, err := f.ssh(ctx, cell, "sudo bash -c "+shellQuote(script))
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("bosh ssh %s: %d rows (exit %d, log %s)", cell, len(rows), res.ExitCode, res.Log)
	}
	return rows[0].Stdout, nil
}

// placements reads every container's placement on the cell.
func (f *fleet) placements(ctx context.Context, cell string) (map[string]v2Placement, error) {
	out, err := f.onCell(ctx, cell, v2PlacementScript)
	if err != nil {
		return nil, err
	}
	return parsePlacements(out), nil
}

// v2Validate runs the operator's `cellguard validate --phase drain` on the
// cell and returns the report and the v2 checks' problems and what could
// not run.
func (f *fleet) v2Validate(ctx context.Context, r *Record, cell, when string) (validator.Report, []string, error) {
	out, err := f.onCell(ctx, cell, "echo '"+reportMark+"'; "+cellguardBin+" validate --phase drain --format json --log-file /dev/null")
	if err != nil {
		return validator.Report{}, nil, err
	}
	rep, err := decodeReport(out)
	if err != nil {
		return rep, nil, fmt.Errorf("cellguard validate on %s %s: %w", cell, when, err)
	}
	problems, couldNot := problemsOf(rep, v2Checks)
	problems = append(problems, couldNot...)
	r.Say("   %s: cellguard validate --phase drain %s: blocked %t; %s", cell, when, rep.Blocked, checkSummary(rep, v2Checks))
	for i, p := range problems {
		if i < 10 {
			r.Say("      %s", p)
		}
	}
	return rep, problems, nil
}

// watchEvent is one finding or finding-cleared line of watch.log.
type watchEvent struct {
	At                     float64
	Cleared                bool
	Check, Subject, Detail string
	Trigger                string // what made watch scan: job, subtree-control, period, ...
}

// watchMark is watch.log's length in lines: where the events of what
// follows begin (watchEvents' skip).
func (f *fleet) watchMark(ctx context.Context, cell string) (int, error) {
	out, err := f.onCell(ctx, cell, "wc -l <"+watchLog)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("watch.log on %s: %q", cell, out)
	}
	return n, nil
}

// watchEvents reads watch.log's finding lines after its first skip lines.
func (f *fleet) watchEvents(ctx context.Context, cell string, skip int) ([]watchEvent, error) {
	out, err := f.onCell(ctx, cell, fmt.Sprintf("tail -n +%d %s", skip+1, watchLog))
	if err != nil {
		return nil, err
	}
	var evs []watchEvent
	for _, l := range strings.Split(out, "\n") {
		var line struct {
			Timestamp string `json:"timestamp"`
			Message   string `json:"message"`
			Data      struct {
				Check, Subject, Detail, Trigger string
			} `json:"data"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(l)), &line) != nil {
			continue
		}
		cleared := strings.HasSuffix(line.Message, ".finding-cleared")
		if !cleared && !strings.HasSuffix(line.Message, ".finding") {
			continue
		}
		evs = append(evs, watchEvent{At: logTime(line.Timestamp), Cleared: cleared, Check: line.Data.Check, Subject: line.Data.Subject, Detail: line.Data.Detail, Trigger: line.Data.Trigger})
	}
	return evs, nil
}

// logTime is a log line's timestamp in seconds since the epoch: RFC 3339
// (the job's cellguard.log.time_format default) or lager's unix seconds.
func logTime(ts string) float64 {
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return float64(t.UnixNano()) / 1e9
	}
	f, _ := strconv.ParseFloat(ts, 64)
	return f
}

// isContainer says whether a finding's subject is Garden's container h
// (watch and validate name it with its runtime namespace: garden/h).
func isContainer(subject, h string) bool { return subject == h || strings.HasSuffix(subject, "/"+h) }

// waitWatch polls watch.log (from line skip on) until an event matches, or
// d passes.
func (f *fleet) waitWatch(ctx context.Context, cell string, skip int, d time.Duration, match func(watchEvent) bool) (watchEvent, bool, error) {
	deadline := time.Now().Add(d)
	for {
		evs, err := f.watchEvents(ctx, cell, skip)
		if err != nil {
			return watchEvent{}, false, err
		}
		for _, e := range evs {
			if match(e) {
				return e, true, nil
			}
		}
		if time.Now().After(deadline) {
			return watchEvent{}, false, nil
		}
		time.Sleep(5 * time.Second)
	}
}

// gclientRun runs gclient command lines on the cell in one bosh ssh and
// returns their results and how many failed.
func (f *fleet) gclientRun(ctx context.Context, r *Record, cell string, cmds ...string) ([]garden.Result, int, error) {
	out, err := f.onCell(ctx, cell, strings.Join(cmds, "; "))
	if err != nil {
		return nil, 0, err
	}
	results := gclientResults(out)
	failed := len(cmds) - len(results)
	var said []string
	for _, res := range results {
		if res.Error != "" {
			failed++
		}
		said = append(said, fmt.Sprintf("%s %s %.1fs%s", res.Op, res.Handle, res.Seconds, errSuffix(res.Error)))
	}
	r.Say("   %s: gclient %s", cell, strings.Join(said, ", "))
	return results, failed, nil
}

// v2Create is the gclient lines that make container h (privileged or not)
// with v2Limits and run a sleep in it, and a pea when pea.
func v2Create(h string, privileged, pea bool) []string {
	args := append([]string{"-handle", h, "-rootfs", "/var/vcap/data/garden/rootfs"}, v2Limits...)
	if privileged {
		args = append(args, "-privileged")
	}
	cmds := []string{gclientV2("create", args...), gclientV2("run", "-handle", h, "--", "sleep", "86400")}
	if pea {
		cmds = append(cmds, gclientV2("run", "-handle", h, "-image", "/var/vcap/data/garden/rootfs", "--", "sleep", "86401"))
	}
	return cmds
}

// gardenV2Scenario is make cell's garden_v2 on a QEMU shape (one cell).
func (f *fleet) gardenV2Scenario(ctx context.Context) Scenario {
	g := &gardenV2{}
	return Scenario{Name: "today's Garden on cgroup v2 (guardian c2d9348 on a noble VM)", Steps: []Step{
		{Name: "bosh deploy with today's Garden (garden.package: guardian-2026-08), the addon protecting monit's unit and naming Garden's runc",
			Expects: []string{"garden-v2-deploy-succeeds"},
			Do: func(r *Record) error {
				f.gardenJob = gardenReleaseName
				res, err := f.rollOut(ctx, r, addon{Level: "info", Protect: true, Runc: gardenV2Runc}, gardenOps, gardenV2Ops)
				if err != nil {
					return err
				}
				r.Expect("garden-v2-deploy-succeeds", res.ExitCode == 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				if res.ExitCode != 0 {
					return fmt.Errorf("bosh deploy exited %d", res.ExitCode)
				}
				return f.storeGardenReleases(ctx, r)
			}},
		{Name: "the cell: Ubuntu's kernel on cgroup v2, and Garden as garden_ctl starts it",
			Expects: []string{"cell-on-cgroup2", "garden-v2-service", "garden-v2-answers"},
			Do: func(r *Record) error {
				order, err := f.cellOrder(ctx)
				if err != nil {
					return err
				}
				g.cell = order[0]
				pkg := "/var/vcap/packages/" + gardenV2Package
				out, err := f.onCell(ctx, g.cell, strings.Join([]string{
					"echo kernel=$(uname -r)", "echo fs=$(stat -fc %T /sys/fs/cgroup)", "echo systemd=$(systemctl --version | head -1 | tr ' ' _)",
					"echo root_subtree=$(cat /sys/fs/cgroup/cgroup.subtree_control | tr ' ' ,)",
					"systemctl show garden.service -p ActiveState -p Delegate -p KillMode -p ControlGroup -p DelegateControllers | tr ' ' ,",
					"echo guardian=$(grep -o 'guardian-[^ ]*' " + pkg + "/BUILDINFO | head -1)",
					"echo runc=$(" + pkg + "/runtime/runc --version | head -1 | awk '{print $3}')",
					"echo containerd=$(" + pkg + "/runtime/containerd --version | awk '{print $3}')",
					gclientV2("ping"),
				}, "; "))
				if err != nil {
					return err
				}
				kv := keyValues(out)
				r.Say("   %s: %s", g.cell, strings.Join(strings.Fields(strings.Split(out, "{")[0]), " "))
				r.Expect("cell-on-cgroup2", kv["fs"] == "cgroup2fs" && strings.HasPrefix(kv["kernel"], "6.8.0-"),
					"kernel %s, /sys/fs/cgroup %s, %s", kv["kernel"], kv["fs"], kv["systemd"])
				r.Expect("garden-v2-service", kv["ActiveState"] == "active" && kv["Delegate"] == "yes" && kv["KillMode"] == "none" &&
					kv["ControlGroup"] == "/system.slice/garden.service",
					"garden.service %s, Delegate=%s (controllers %s), KillMode=%s, in %s", kv["ActiveState"], kv["Delegate"], kv["DelegateControllers"], kv["KillMode"], kv["ControlGroup"])
				res := gclientResults(out)
				r.Expect("garden-v2-answers", len(res) == 1 && res[0].Error == "", "gdn (%s, runc %s, containerd %s) answers ping: %v", kv["guardian"], kv["runc"], kv["containerd"], res)
				return nil
			}},
		{Name: "containers: u1 unprivileged with a pea, p1 privileged, each with 64 MiB and 64 pids",
			Expects: []string{"v2-containers-created", "v2-placement-as-measured", "v2-limits-in-force", "v2-validate-quiet"},
			Do: func(r *Record) error {
				if g.cell == "" {
					return fmt.Errorf("no cell from the step before")
				}
				var err error
				if g.watchLines, err = f.watchMark(ctx, g.cell); err != nil {
					return err
				}
				_, failed, err := f.gclientRun(ctx, r, g.cell, append(v2Create("u1", false, true), v2Create("p1", true, false)...)...)
				if err != nil {
					return err
				}
				r.Expect("v2-containers-created", failed == 0, "%d of Garden's calls failed", failed)
				ps, err := f.placements(ctx, g.cell)
				if err != nil {
					return err
				}
				var ids []string
				for id := range ps {
					ids = append(ids, id)
				}
				sort.Strings(ids)
				for _, id := range ids {
					r.Say("   %s", ps[id])
					if id != "u1" && id != "p1" && strings.HasPrefix(ps[id].Recorded, "/garden/u1/") {
						g.pea = ps[id]
					}
				}
				u1, p1 := ps["u1"], ps["p1"]
				// As TestNobleGardenToday measured (src/tests/qemu/README.md):
				// guardian's own cgroup for unprivileged containers, runc's
				// rule (beside the shim's own cgroup) for privileged ones,
				// which still get a pid namespace of their own, a pea beside
				// its sandbox's init, in the sandbox's pid namespace.
				r.Expect("v2-placement-as-measured", u1.At == "/garden/u1/init" && u1.Recorded == u1.At &&
					p1.At == "/system.slice/p1" && p1.Recorded == p1.At && !p1.HostPIDNS &&
					g.pea.ID != "" && g.pea.At == g.pea.Recorded && g.pea.At == "/garden/u1/"+g.pea.ID && g.pea.PIDNS == u1.PIDNS && !u1.HostPIDNS,
					"u1 at %s, p1 at %s (a pid namespace of its own: %t), u1's pea %s at %s (u1's pid namespace: %t)",
					u1.At, p1.At, !p1.HostPIDNS, g.pea.ID, g.pea.At, g.pea.PIDNS == u1.PIDNS)
				inForce := func(p v2Placement) bool {
					return p.Limits["memory.max"] == v2MemoryBytes && p.Limits["pids.max"] == v2Pids
				}
				r.Expect("v2-limits-in-force", inForce(u1) && inForce(p1), "u1: %s; p1: %s", describeLimits(u1.Limits), describeLimits(p1.Limits))
				_, problems, err := f.v2Validate(ctx, r, g.cell, "with u1, its pea and p1")
				if err != nil {
					return err
				}
				r.Expect("v2-validate-quiet", len(problems) == 0, "%d findings of %v where nothing was provoked", len(problems), v2Checks)
				return nil
			}},
		{Name: "a churn: two rounds of an unprivileged and a privileged container, a pea in each, validate, destroy",
			Expects: []string{"v2-churn-through-garden", "v2-churn-validate-quiet", "v2-churn-watch-quiet"},
			Do: func(r *Record) error {
				failed, quiet := 0, 0
				for i := 1; i <= 2; i++ {
					u, p := fmt.Sprintf("cu%d", i), fmt.Sprintf("cp%d", i)
					_, n, err := f.gclientRun(ctx, r, g.cell, append(v2Create(u, false, true), v2Create(p, true, true)...)...)
					if err != nil {
						return err
					}
					failed += n
					_, problems, err := f.v2Validate(ctx, r, g.cell, fmt.Sprintf("in round %d", i))
					if err != nil {
						return err
					}
					if len(problems) == 0 {
						quiet++
					}
					_, n, err = f.gclientRun(ctx, r, g.cell, gclientV2("destroy", "-handle", u), gclientV2("destroy", "-handle", p))
					if err != nil {
						return err
					}
					failed += n
				}
				r.Expect("v2-churn-through-garden", failed == 0, "%d of the churn's Garden calls failed", failed)
				r.Expect("v2-churn-validate-quiet", quiet == 2, "validate found nothing in %d of 2 rounds", quiet)
				evs, err := f.watchEvents(ctx, g.cell, g.watchLines)
				if err != nil {
					return err
				}
				// Findings opened since, not the clearing of one opened
				// before.
				var found []string
				for _, e := range evs {
					if !e.Cleared && slices.Contains(v2Checks, e.Check) {
						found = append(found, fmt.Sprintf("%s %s: %s", e.Check, e.Subject, e.Detail))
					}
				}
				r.Expect("v2-churn-watch-quiet", len(found) == 0, "watch logged %d findings of %v since the containers were made: %v", len(found), v2Checks, found)
				return nil
			}},
		{Name: "systemctl daemon-reload: nothing stripped (garden.service, Delegate=yes, loaded; monit's unit delegated by the addon)",
			Expects: []string{"daemon-reload-strips-nothing"},
			Do: func(r *Record) error {
				read := `for d in / /system.slice /garden /garden/u1; do echo "subtree $d $(cat /sys/fs/cgroup$d/cgroup.subtree_control | tr ' ' ,)"; done`
				before, err := f.onCell(ctx, g.cell, read+"\n"+v2PlacementScript)
				if err != nil {
					return err
				}
				after, err := f.onCell(ctx, g.cell, "systemctl daemon-reload; sleep 2\n"+read+"\n"+v2PlacementScript)
				if err != nil {
					return err
				}
				same := strings.TrimSpace(before) == strings.TrimSpace(after)
				for _, l := range strings.Split(strings.TrimSpace(after), "\n") {
					r.Say("   after: %s", l)
				}
				r.Expect("daemon-reload-strips-nothing", same && strings.Contains(after, "placement|u1|"),
					"every subtree_control and limit file read the same before and after (differs: %t)", !same)
				return nil
			}},
		// guardian sets memory and cpu on /garden/<h> and runc sets them
		// again with pids on /garden/<h>/init (src/tests/qemu/README.md):
		// memory switched off below /garden/<h> still holds there, so the
		// limit that can be lost by hand alone is pids.
		{Name: "a limit lost by hand: -pids into /garden/u1's cgroup.subtree_control, then the recorded value back",
			Expects: []string{"kernel-keeps-garden-pids", "validate-names-lost-pids", "watch-names-lost-pids", "watch-clears-restored-pids"},
			Do: func(r *Record) error {
				mark, err := f.watchMark(ctx, g.cell)
				if err != nil {
					return err
				}
				out, err := f.onCell(ctx, g.cell, `cd /sys/fs/cgroup
say() { if err=$(echo "$2" 2>&1 >"$1/cgroup.subtree_control"); then echo written; else echo "refused:${err##*: }" | tr ' ' _; fi; }
echo "garden=$(say garden -pids)"
echo "at=$(date +%s.%N)"
echo "u1=$(say garden/u1 -pids)"
echo "init_pids.max=$(cat garden/u1/init/pids.max 2>/dev/null || echo ABSENT)"`)
				if err != nil {
					return err
				}
				kv := keyValues(out)
				r.Say("   %s: %s", g.cell, strings.Join(strings.Fields(out), " "))
				// The kernel refuses while a child enables the controller:
				// /garden/u1 enables pids for its init.
				r.Expect("kernel-keeps-garden-pids", strings.HasPrefix(kv["garden"], "refused"), "-pids on /garden: %s", kv["garden"])
				at, _ := strconv.ParseFloat(kv["at"], 64)
				_, problems, err := f.v2Validate(ctx, r, g.cell, "after -pids on /garden/u1")
				if err != nil {
					return err
				}
				named := slices.ContainsFunc(problems, func(p string) bool {
					return strings.HasPrefix(p, "limits-intact: ") && strings.Contains(p, "u1:") && strings.Contains(p, "pids")
				})
				r.Expect("validate-names-lost-pids", kv["u1"] == "written" && kv["init_pids.max"] == "ABSENT" && named,
					"-pids on /garden/u1 %s, pids.max of /garden/u1/init %s; limits-intact names u1's pids: %t", kv["u1"], kv["init_pids.max"], named)
				e, ok, err := f.waitWatch(ctx, g.cell, mark, 2*time.Minute, func(e watchEvent) bool {
					return !e.Cleared && e.Check == "limits-intact" && isContainer(e.Subject, "u1")
				})
				if err != nil {
					return err
				}
				r.Expect("watch-names-lost-pids", ok, "watch (trigger %s): %q %.1f s after the write", e.Trigger, e.Detail, e.At-at)
				out, err = f.onCell(ctx, g.cell, `cd /sys/fs/cgroup; echo +pids >garden/u1/cgroup.subtree_control && echo `+v2Pids+` >garden/u1/init/pids.max; echo "at=$(date +%s.%N)"`)
				if err != nil {
					return err
				}
				at, _ = strconv.ParseFloat(keyValues(out)["at"], 64)
				e, ok, err = f.waitWatch(ctx, g.cell, mark, 2*time.Minute, func(e watchEvent) bool {
					return e.Cleared && e.Check == "limits-intact" && isContainer(e.Subject, "u1")
				})
				if err != nil {
					return err
				}
				r.Expect("watch-clears-restored-pids", ok, "+pids and the recorded %s back: watch (trigger %s) cleared the finding %.1f s later", v2Pids, e.Trigger, e.At-at)
				return nil
			}},
		{Name: "an escape: u1's pea's process moved to the root cgroup (a pea shares its sandbox's pid namespace)",
			Expects: []string{"validate-blocks-pea-escape", "watch-names-pea-escape"},
			Do: func(r *Record) error {
				if g.pea.ID == "" {
					return fmt.Errorf("no pea from the steps before")
				}
				mark, err := f.watchMark(ctx, g.cell)
				if err != nil {
					return err
				}
				out, err := f.onCell(ctx, g.cell, fmt.Sprintf(`echo "at=$(date +%%s.%%N)"; echo %d >/sys/fs/cgroup/cgroup.procs`, g.pea.PID))
				if err != nil {
					return err
				}
				at, _ := strconv.ParseFloat(keyValues(out)["at"], 64)
				rep, problems, err := f.v2Validate(ctx, r, g.cell, "after the pea's escape")
				if err != nil {
					return err
				}
				named := slices.ContainsFunc(problems, func(p string) bool {
					return strings.HasPrefix(p, "cgroup-integrity: fail") && strings.Contains(p, g.pea.ID)
				})
				r.Expect("validate-blocks-pea-escape", rep.Blocked && named, "blocked %t; cgroup-integrity names pea %s: %t", rep.Blocked, g.pea.ID, named)
				e, ok, err := f.waitWatch(ctx, g.cell, mark, 2*time.Minute, func(e watchEvent) bool {
					return !e.Cleared && e.Check == "cgroup-integrity" && strings.Contains(e.Subject+e.Detail, g.pea.ID)
				})
				if err != nil {
					return err
				}
				// A write to cgroup.procs is no systemd event and changes
				// no subtree_control: watch's period (60 s) names it
				// (docs/validator.md, "When it scans").
				r.Expect("watch-names-pea-escape", ok, "watch (trigger %s) %.1f s after the move: %s %s", e.Trigger, e.At-at, e.Subject, e.Detail)
				return nil
			}},
		{Name: "the next deploy: drain heals the escape (cellguard.drain.heal, the job's default) and the update completes",
			Expects: []string{"v2-deploy-after-escape", "drain-healed-pea", "v2-quiet-after-heal"},
			Do: func(r *Record) error {
				res, err := f.rollOut(ctx, r, addon{Level: "debug", Protect: true, Runc: gardenV2Runc}, gardenOps, gardenV2Ops)
				if err != nil {
					return err
				}
				r.Expect("v2-deploy-after-escape", res.ExitCode == 0, "bosh deploy exited %d after %s", res.ExitCode, res.Took.Round(time.Second))
				ps, err := f.placements(ctx, g.cell)
				if err != nil {
					return err
				}
				pea := ps[g.pea.ID]
				r.Say("   %s", pea)
				log, err := f.drainLog(ctx, r, g.cell)
				if err != nil {
					return err
				}
				decided, heals := lastDrain(log)
				movedPea := slices.ContainsFunc(heals, func(h drainEntry) bool { return h.Data.PID == g.pea.PID && h.Data.Result == "moved" })
				r.Expect("drain-healed-pea", decided != nil && decided.Data.Outcome == "healed" && movedPea && pea.PID == g.pea.PID && pea.At == g.pea.Recorded,
					"the cell's last drain decided %v, moved pid %d: %t; pea %s's init %d at %s after the deploy (recorded %s)",
					outcomeOf(decided), g.pea.PID, movedPea, pea.ID, pea.PID, pea.At, pea.Recorded)
				_, problems, err := f.v2Validate(ctx, r, g.cell, "after the deploy")
				if err != nil {
					return err
				}
				r.Expect("v2-quiet-after-heal", len(problems) == 0, "%d findings of %v", len(problems), v2Checks)
				return nil
			}},
		{Name: "Garden destroys u1 and p1: no container, process or cgroup of theirs left",
			Expects: []string{"v2-destroy-leaves-nothing"},
			Do: func(r *Record) error {
				_, failed, err := f.gclientRun(ctx, r, g.cell, gclientV2("destroy", "-handle", "u1"), gclientV2("destroy", "-handle", "p1"), gclientV2("list"))
				if err != nil {
					return err
				}
				out, err := f.onCell(ctx, g.cell, `echo "left=$(pgrep -fc 'sleep 8640[01]')"; echo "cgroups=$(ls -d /sys/fs/cgroup/garden/u1 /sys/fs/cgroup/system.slice/p1 2>/dev/null | wc -l)"; echo "containers=$(ls `+gardenShimRoot+` 2>/dev/null | wc -l)"`)
				if err != nil {
					return err
				}
				kv := keyValues(out)
				r.Expect("v2-destroy-leaves-nothing", failed == 0 && kv["left"] == "0" && kv["cgroups"] == "0" && kv["containers"] == "0",
					"%d calls failed; processes left %s, cgroups left %s, runc containers left %s", failed, kv["left"], kv["cgroups"], kv["containers"])
				return nil
			}},
	}}
}
