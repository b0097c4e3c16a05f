package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Seed 002 with real Garden on a cell (issue 22), what src/tests/garden's
// seed002 measured in a box, on the director's VMs: gdn is SIGKILLed behind
// monit's back (so it saves no container properties), its depot removed
// before monit's next cycle restarts it, and one container's init killed
// while Garden is down (as an OOM kill would). On this job garden.service's
// ExecStop (garden_stop) runs when gdn dies, and it SIGKILLs containerd;
// KillMode=none leaves the shims and the containers. monit (cycle 10 s)
// then runs garden_ctl start.

const (
	gardenDepot   = "/var/vcap/data/garden/depot"
	gardenRunDir  = "/var/vcap/sys/run/garden"
	containerdV2  = "/var/vcap/sys/run/containerd/state/io.containerd.runtime.v2.task/garden" // containerd's tasks of namespace garden
	seed002Live   = "g1"                                                                      // runs on while Garden is down: a task Garden forgot
	seed002Ghost  = "g2"                                                                      // its init dies while Garden is down
	seed002Budget = 180 * time.Second                                                         // monit's cycle, garden_start (containerd, gdn setup) and gdn's cleanup
)

// seed002Run is what the seed-002 steps pass on.
type seed002Run struct {
	containers     map[string]gardenContainer
	gdnPID         string
	bridges, chain int // Garden's bridges and iptables instance chains before g1 and g2
	downAt         time.Time
}

// gardenSeed002Steps: the kill and the verdict while Garden is down, then
// what monit's restart of Garden cleaned and left.
func (f *fleet) gardenSeed002Steps(ctx context.Context, g *gardenRun) []Step {
	s := &seed002Run{containers: map[string]gardenContainer{}}
	return []Step{
		{Name: "seed 002: g1 and g2 through Garden; gdn SIGKILLed behind monit's back, its depot removed, g2's init killed; sudo cellguard validate over bosh ssh while Garden is down",
			Expects: []string{"seed002-containers", "seed002-garden-down", "seed002-ghost-named"},
			Do:      func(r *Record) error { return f.seed002Kill(ctx, r, g, s) }},
		{Name: "seed 002: monit restarts Garden without its depot; what gdn's start cleaned and left",
			Expects: []string{"seed002-monit-restarts-garden", "seed002-restart-destroys-all", "seed002-restart-leaves-networks", "seed002-validate-after-restart"},
			Do:      func(r *Record) error { return f.seed002Restart(ctx, r, g, s) }},
	}
}

func (f *fleet) seed002Kill(ctx context.Context, r *Record, g *gardenRun, s *seed002Run) error {
	if g.vm.InitPID == "" {
		return fmt.Errorf("no cell with Garden from the steps before")
	}
	var err error
	if s.bridges, s.chain, err = gardenNetworks(ctx, g.vm); err != nil {
		return err
	}
	var cmds []string
	for _, h := range []string{seed002Live, seed002Ghost} {
		cmds = append(cmds, "sudo "+gclient("create", "-handle", h, "-rootfs", "/var/vcap/data/garden/rootfs"),
			"sudo "+gclient("run", "-handle", h, "--", "sleep", "86400"))
	}
	rows, _, err := f.ssh(ctx, g.cell, strings.Join(cmds, "; "))
	if err != nil {
		return err
	}
	failed := 0
	for _, row := range rows {
		for _, res := range gclientResults(row.Stdout) {
			if res.Error != "" {
				failed++
			}
		}
	}
	for _, h := range []string{seed002Live, seed002Ghost} {
		c, err := f.inspectContainer(ctx, g.vm, h)
		if err != nil {
			return err
		}
		s.containers[h] = c
		r.Say("   %s: %s: init pid %d, pids %v", g.cell, h, c.InitPID, c.PIDs)
	}
	live, ghost := s.containers[seed002Live], s.containers[seed002Ghost]
	r.Expect("seed002-containers", failed == 0 && len(live.PIDs) >= 2 && len(ghost.PIDs) >= 2,
		"g1 and g2 made and a process run in each through Garden (%d calls failed); %d and %d processes; before them Garden had %d bridges and %d instance chains",
		failed, len(live.PIDs), len(ghost.PIDs), s.bridges, s.chain)

	// One shell, as an outsider on the VM would. It waits for monit's next
	// cycle ("data collected" changes) and kills right after it: monit
	// restarts Garden at the cycle that finds gdn gone, 0-10 s after the
	// kill (2.8 s in run 2), and validate, 1.5 s, must read the host before.
	// validate starts once g2's init is gone from /proc: a SIGKILLed pid
	// namespace init lives on while the kernel kills the namespace's other
	// processes, and until its shim reaps it it is no ghost (run 5: validate
	// read it 0.3 s after the kill, still there, and rightly named nothing).
	script := fmt.Sprintf(`R=%[1]s
M="/var/vcap/bosh/bin/monit -c /var/vcap/bosh/etc/monitrc"
t0=$($M status 2>/dev/null | grep -m1 'data collected')
for i in $(seq 1 60); do t=$($M status 2>/dev/null | grep -m1 'data collected'); [ -n "$t" ] && [ "$t" != "$t0" ] && break; sleep 0.2; done
echo "monit cycle: ${t0:-none} -> ${t:-none}" | tr -s ' '
p=$(cat $R/garden.pid); c=$(cat $R/containerd.pid 2>/dev/null)
echo "before: gdn $p containerd $c shims $(pgrep -d, -f containerd-shim-runc-v2)"
kill -9 "$p"
for i in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
rm -rf %[2]s
kill -9 %[3]d
for i in $(seq 1 100); do [ -e /proc/%[3]d ] || break; sleep 0.05; done
echo "killed: $(date -u +%%s.%%N) (g2's init: $([ -e /proc/%[3]d ] && echo still there || echo gone))"
echo '%[5]s'
%[4]s validate --phase drain --format json --log-file /dev/null
echo
echo "validated: $(date -u +%%s.%%N)"
echo "garden.service: $(systemctl show garden.service -p ActiveState -p SubState -p MainPID | tr '\n' ' ')"
echo "gdn now: $(pgrep -d, -x gdn)"
echo "containerd now: $(pgrep -d, -x containerd)"
echo "shims now: $(pgrep -d, -f containerd-shim-runc-v2)"
echo "depot: $(ls -d %[2]s 2>&1)"
`, gardenRunDir, gardenDepot, ghost.InitPID, cellguardBin, reportMark)
	rows, res, err := f.ssh(ctx, g.cell, "echo "+base64.StdEncoding.EncodeToString([]byte(script))+" | base64 -d | sudo sh -s")
	if err != nil {
		return err
	}
	s.downAt = time.Now()
	if len(rows) != 1 {
		return fmt.Errorf("bosh ssh %s: %d rows (exit %d, log %s)", g.cell, len(rows), res.ExitCode, res.Log)
	}
	out := rows[0].Stdout
	said := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "{") {
			said[k] = strings.TrimSpace(v)
		}
		if strings.HasPrefix(l, "monit cycle:") || strings.HasPrefix(l, "before:") || strings.HasPrefix(l, "killed:") || strings.HasPrefix(l, "validated:") ||
			strings.HasPrefix(l, "garden.service:") || strings.HasPrefix(l, "gdn now:") || strings.HasPrefix(l, "containerd now:") ||
			strings.HasPrefix(l, "shims now:") || strings.HasPrefix(l, "depot:") {
			r.Say("   %s", l)
		}
	}
	if f := strings.Fields(said["before"]); len(f) >= 2 {
		s.gdnPID = f[1]
	}
	aliveLive := alivePIDs(ctx, g.vm, live.PIDs)
	aliveGhost := alivePIDs(ctx, g.vm, ghost.PIDs)
	killed, _ := strconv.ParseFloat(strings.Fields(said["killed"] + " 0")[0], 64)
	validated, _ := strconv.ParseFloat(said["validated"], 64)
	down := said["gdn now"] == "" && s.gdnPID != "" && strings.Contains(said["depot"], "No such file")
	r.Expect("seed002-garden-down", down && len(aliveGhost) == 0,
		"gdn (pid %s) SIGKILLed and its depot gone; at validate's end (%.1fs after the kills) no gdn runs: %t; of g2's pids %v alive: %v; of g1's %v alive: %v",
		s.gdnPID, validated-killed, said["gdn now"] == "", ghost.PIDs, aliveGhost, live.PIDs, aliveLive)

	rep, err := decodeReport(out)
	if err != nil {
		return fmt.Errorf("sudo cellguard validate over bosh ssh on %s (exit %s): %w", g.cell, rows[0].ExitCode, err)
	}
	fs, couldNot := containerProblems(rep)
	r.Say("   sudo cellguard validate --phase drain --format json while Garden is down (exit %s): %s", rows[0].ExitCode, checkSummary(rep, containerChecks))
	for _, p := range fs {
		r.Say("      %s", p)
	}
	for _, res := range rep.Results {
		if res.ID == "runtime-ghosts" {
			r.Say("      runtime-ghosts' fix: %s", res.Fix)
		}
	}
	// What runtime-ghosts can know: g2's state outlived its init. g1's
	// state is consistent (its init runs); that Garden forgot it is in no
	// runtime state cellguard reads.
	want := fmt.Sprintf("init pid %d is gone", ghost.InitPID)
	named, other := 0, 0
	for _, p := range fs {
		switch {
		case strings.HasPrefix(p, "runtime-ghosts:") && strings.Contains(p, want) && strings.Contains(p, "/"+seed002Ghost+"/state.json") &&
			strings.Contains(p, gardenRestartSays):
			named++
		default:
			other++
		}
	}
	r.Expect("seed002-ghost-named", named == 1 && other == 0 && len(couldNot) == 0,
		"runtime-ghosts names g2's dead init (%q, its state.json, %q) %d times; %d other container findings (g1, whose init runs, must have none); could not run: %v",
		want, gardenRestartSays, named, other, couldNot)
	return nil
}

func (f *fleet) seed002Restart(ctx context.Context, r *Record, g *gardenRun, s *seed002Run) error {
	if s.gdnPID == "" {
		return fmt.Errorf("no gdn killed in the step before")
	}
	// monit's restart: a new gdn in garden.pid that answers ping.
	var newPID string
	deadline := time.Now().Add(seed002Budget)
	for time.Now().Before(deadline) {
		pid, _ := g.vm.Exec(ctx, "cat", gardenRunDir+"/garden.pid")
		pid = strings.TrimSpace(pid)
		if pid != "" && pid != s.gdnPID {
			if _, err := g.vm.Exec(ctx, gclientBin, "ping", "-network", "unix", "-addr", gardenSocket); err == nil {
				newPID = pid
				break
			}
		}
		time.Sleep(time.Second)
	}
	since := time.Since(s.downAt).Round(time.Second)
	ctl, _ := g.vm.Exec(ctx, "tail", "-n", "3", gardenLogDir+"/garden_ctl.stdout.log")
	start, _ := g.vm.Exec(ctx, "tail", "-n", "6", gardenLogDir+"/garden_start.log")
	for _, l := range strings.Split(strings.TrimSpace(ctl+"\n"+start), "\n") {
		r.Say("      %s", l)
	}
	r.Expect("seed002-monit-restarts-garden", newPID != "",
		"monit restarted Garden: gdn pid %s (was %s), answering ping %s after the validate over bosh ssh returned", newPID, s.gdnPID, since)
	if newPID == "" {
		return fmt.Errorf("no new gdn answered ping within %s of its kill", seed002Budget)
	}

	// gdn's start (gardener.Cleanup): every container of containerd's
	// namespace garden it cannot restore (no saved properties) destroyed.
	msgs := []string{"failed-restoring-container", "clean-up-container.cleaned-up", "no-properties-for-container-skipping-destroy-network"}
	seen := map[string]string{}
	for time.Now().Before(deadline.Add(60 * time.Second)) {
		out, _ := g.vm.Exec(ctx, "grep", "-E", "failed-restoring-container|clean-up-container|no-properties-for-container", gardenLogDir+"/garden.stdout.log")
		for _, l := range strings.Split(out, "\n") {
			for _, h := range []string{seed002Live, seed002Ghost} {
				for _, m := range msgs {
					if strings.Contains(l, m) && strings.Contains(l, `"handle":"`+h+`"`) {
						seen[h+" "+m] = l
					}
				}
			}
		}
		if len(seen) == 2*len(msgs) {
			break
		}
		time.Sleep(time.Second)
	}
	for _, h := range []string{seed002Live, seed002Ghost} {
		for _, m := range msgs {
			if l, ok := seen[h+" "+m]; ok {
				r.Say("      gdn: %s", truncate(l, 260))
			}
		}
	}
	var pids []int
	for _, h := range []string{seed002Live, seed002Ghost} {
		pids = append(pids, s.containers[h].PIDs...)
	}
	var alive []int
	for i := 0; i < 40; i++ {
		if alive = alivePIDs(ctx, g.vm, pids); len(alive) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	script := fmt.Sprintf(`%[1]s; echo "runc states: $(ls %[2]s 2>&1 | tr '\n' ' ')"
echo "containerd tasks: $(ls %[3]s 2>&1 | tr '\n' ' ')"
echo "bridges: $(ip -o link show type bridge | grep -o 'wbrdg-[0-9a-f]*' | tr '\n' ' ')"
echo "instance chains: $(iptables -S | grep -o '^-N w--instance-[^ ]*' | tr '\n' ' ')"
echo "containerd: $(pgrep -d, -x containerd) shims: $(pgrep -d, -f containerd-shim-runc-v2)"
echo '%[5]s'
%[4]s validate --phase drain --format json --log-file /dev/null`,
		gclient("list"), gardenShimRoot, containerdV2, cellguardBin, reportMark)
	rows, _, err := f.ssh(ctx, g.cell, "echo "+base64.StdEncoding.EncodeToString([]byte(script))+" | base64 -d | sudo sh -s")
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return fmt.Errorf("bosh ssh %s: %d rows", g.cell, len(rows))
	}
	out := rows[0].Stdout
	var listed []string
	listOK := false
	for _, res := range gclientResults(out) {
		if res.Op == "list" && res.Error == "" {
			listed, listOK = res.Handles, true
		}
	}
	said := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && !strings.HasPrefix(l, "{") && !strings.HasPrefix(l, " ") {
			said[k] = strings.TrimSpace(v)
			r.Say("   %s", l)
		}
	}
	statesLeft := containsAny(said["runc states"], seed002Live, seed002Ghost) || containsAny(said["containerd tasks"], seed002Live, seed002Ghost)
	r.Expect("seed002-restart-destroys-all", listOK && len(listed) == 0 && len(alive) == 0 && !statesLeft && len(seen) >= 4,
		"Garden lists %v (list ok: %t); of g1's and g2's pids %v alive: %v; their runc state or containerd task left: %t; gdn's log: %d of %d restore-failed/cleaned-up/skipped-network lines",
		listed, listOK, pids, alive, statesLeft, len(seen), 2*len(msgs))
	bridges, chains := len(strings.Fields(said["bridges"])), 0
	for _, w := range strings.Fields(said["instance chains"]) {
		if strings.HasPrefix(w, "w--instance-") {
			chains++
		}
	}
	// Garden makes one bridge and two filter chains (w--instance-ID and
	// its -log) per container.
	r.Expect("seed002-restart-leaves-networks", bridges == s.bridges+2 && chains == s.chain+4,
		"Garden's bridges %d -> %d, its iptables instance chains %d -> %d (g1's and g2's networks, one bridge and two chains each: gdn saved no properties, so their destroy skipped them)",
		s.bridges, bridges, s.chain, chains)
	rep, err := decodeReport(out)
	if err != nil {
		return fmt.Errorf("sudo cellguard validate after Garden's restart (exit %s): %w", rows[0].ExitCode, err)
	}
	fs, couldNot := containerProblems(rep)
	r.Say("   sudo cellguard validate --phase drain after Garden's restart (exit %s): %s", rows[0].ExitCode, checkSummary(rep, containerChecks))
	for _, p := range fs {
		r.Say("      %s", p)
	}
	r.Expect("seed002-validate-after-restart", len(fs) == 0 && len(couldNot) == 0,
		"after Garden's start cleaned up: %d container findings, could not run: %v", len(fs), couldNot)
	return nil
}

// gardenNetworks counts Garden's bridges (wbrdg-*) and iptables instance
// chains (w--instance-*) in the VM.
func gardenNetworks(ctx context.Context, vm VM) (bridges, chains int, err error) {
	out, err := vm.Exec(ctx, "sh", "-c", `ip -o link show type bridge | grep -c wbrdg-; iptables -S | grep -c '^-N w--instance-'; true`)
	if err != nil {
		return 0, 0, fmt.Errorf("count Garden's networks in %s: %w", vm.Name, err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("count Garden's networks in %s: %q", vm.Name, out)
	}
	bridges, _ = strconv.Atoi(f[0])
	chains, _ = strconv.Atoi(f[1])
	return bridges, chains, nil
}

func containsAny(s string, words ...string) bool {
	for _, w := range strings.Fields(s) {
		for _, x := range words {
			if w == x {
				return true
			}
		}
	}
	return false
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// gardenRestartSays is what runtime-ghosts' finding on a ghost of Garden's
// says Garden's restart will do (checks.gardenRestart), which the restart
// step then measures.
const gardenRestartSays = "Garden's restart: gdn's next start destroys it only if it cannot restore it"
