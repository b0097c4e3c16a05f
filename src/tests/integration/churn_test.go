package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/sdbox"
)

// Churn generators, run inside the box. Each loops until /run/churn/stop
// exists and then writes how many processes it started.
const (
	// churnHost forks short shells in the box's own cgroups (outside every
	// container cgroup). Before each fork it winds the box's pid counter back
	// to $1, so the pids of processes that just exited, container and host
	// ones alike, are handed out again at once: what a cell sees after its
	// pid counter wraps, compressed into seconds. Each shell appends its pid,
	// so the test can count reuses.
	churnHost = `#!/bin/sh
base=$1 n=0
while [ ! -e /run/churn/stop ]; do
  echo "$base" > /run/churn/proc/sys/kernel/ns_last_pid
  sh -c 'echo $$ >> /run/churn/host.pids'
  sh -c true & sh -c true
  wait
  echo "$base" > /run/churn/proc/sys/kernel/ns_last_pid
  (sleep 0.5 &)
  n=$((n+5))
done
echo $n > /run/churn/host.count
`
	// churnExec runs short commands in the container with runc exec: each
	// is a runc, a runc init that joins the container's namespaces and then
	// its cgroups one hierarchy after another, and the command.
	churnExec = `#!/bin/sh
n=0
while [ ! -e /run/churn/stop ]; do
  runc --root /run/runc exec c1 /bin/sh -c : && n=$((n+1))
done
echo $n > /run/churn/exec.count
`
	// churnInside forks inside the container (its cgroups, its pid
	// namespace) and lets some children outlive a loop turn.
	churnInside = `n=0
while [ ! -e /stop ]; do
  /bin/sh -c : ; /bin/sleep 0.05 & /bin/sh -c :
  n=$((n+3))
done
wait
echo $n > /count
`
	// scanLoop runs the validator $1 times or for $2 seconds, whichever
	// ends first, keeping each run's stdout, stderr and exit code; for a
	// run that failed it records the processes the report names.
	scanLoop = `#!/bin/sh
max=$1 end=$(( $(date +%s) + $2 )) i=0
shift 2
mkdir -p /run/churn/v
while [ $i -lt $max ] && [ $(date +%s) -lt $end ]; do
  i=$((i+1))
  "$@" >/run/churn/v/$i.out 2>/run/churn/v/$i.err
  rc=$?
  echo $rc >/run/churn/v/$i.rc
  if [ $rc != 0 ]; then
    for p in $(grep -o '"pid": "[0-9]*"' /run/churn/v/$i.err | grep -o '[0-9]*' | sort -u); do
      pp=$(awk '{print $4}' /proc/$p/stat 2>/dev/null)
      { echo "== $p"; cat /proc/$p/stat /proc/$p/cgroup; tr '\0' ' ' </proc/$p/cmdline; echo; echo "parent $pp: $(tr '\0' ' ' </proc/$pp/cmdline)"; cat /proc/$pp/cgroup; } >>/run/churn/debug 2>&1
    done
  fi
done
echo $i
`
)

// scanTally counts what the validator runs reported.
type scanTally struct {
	scans, errors, falsePositives int
	examples                      []string
}

func (s *scanTally) note(format string, a ...any) {
	if len(s.examples) < 20 {
		s.examples = append(s.examples, fmt.Sprintf(format, a...))
	}
}

// add counts one drain run: exit 2, an unparsable report, a check that
// could not run or any error line is an error; a cgroup-integrity,
// runtime-ghosts or stuck-runc-init finding that is not a pass is a false
// positive (nothing escaped while it ran).
func (s *scanTally) add(i int, code int, stdout, stderr string) {
	s.scans++
	var rep struct {
		Results []struct {
			ID       string `json:"id"`
			Status   string `json:"status"`
			Error    string `json:"error"`
			Findings []struct {
				Status string `json:"status"`
				Detail string `json:"detail"`
			} `json:"findings"`
		} `json:"results"`
	}
	// The drain contract: 0 and "0" when nothing blocks, 1 and nothing when
	// something does.
	wantStdout := map[int]string{0: "0\n", 1: ""}[code]
	if err := json.Unmarshal([]byte(stderr), &rep); err != nil || code == 2 || stdout != wantStdout {
		s.errors++
		s.note("scan %d: exit %d, stdout %q, report %v: %.300s", i, code, stdout, err, stderr)
		return
	}
	fps := 0
	for _, r := range rep.Results {
		if r.Status == "error" {
			s.errors++
			s.note("scan %d: %s could not run: %s", i, r.ID, r.Error)
			continue
		}
		switch r.ID {
		case "cgroup-integrity", "runtime-ghosts", "stuck-runc-init":
		default:
			continue
		}
		for _, f := range r.Findings {
			if f.Status != "pass" && f.Status != "skip" {
				fps++
				s.note("scan %d: %s %s: %s", i, r.ID, f.Status, f.Detail)
			}
		}
	}
	s.falsePositives += fps
	if code != 0 && fps == 0 {
		s.errors++
		s.note("scan %d: exit %d without a finding", i, code)
	}
}

// TestValidateUnderChurn: thousands of processes start and exit, pids are
// handed out again at once, while the validator scans the live box over and
// over; every scan must end without an error and without a finding, because
// nothing escapes. Churn runs in the container (forks in its cgroups and pid
// namespace), through `runc exec` (processes joining the container one
// hierarchy after another) and beside it (host shells in the box's
// cgroups), with the pid counter wound back before every host fork. A real
// escape afterwards must be counted, so the tally is not blind.
func TestValidateUnderChurn(t *testing.T) {
	// Enough scans to prove something, not a time: on a loaded machine 40 s
	// held 32 scans and the test failed for the machine's sake. The churn
	// loops run as long as the scans do, so processes and pid reuses grow
	// with them; maxSeconds only bounds a wedged run.
	const (
		maxScans   = 60
		maxSeconds = 240
	)
	box := bootBoxMode(t, "churn", cgroup.Hybrid)
	cellguard := box.InstallCellguard(t)
	installRunc(t, box)
	// The in-container loop leaves its count in the rootfs.
	b, err := box.ReadFile(bundle + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	spec["root"].(map[string]any)["readonly"] = false
	if b, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}
	writeFile(t, box, bundle+"/config.json", string(b), 0o644)
	initPID := startGarden(t, box)
	removeContainersAtEnd(t, box, "c1")

	// ns_last_pid of the box's pid namespace is writable only through a
	// proc mounted in the box (nspawn's /proc/sys is read-only).
	box.Run(t, "mkdir", "-p", "/run/churn/proc")
	box.Run(t, "mount", "-t", "proc", "proc", "/run/churn/proc")
	writeFile(t, box, "/usr/local/bin/churn-host", churnHost, 0o755)
	writeFile(t, box, "/usr/local/bin/churn-exec", churnExec, 0o755)
	writeFile(t, box, "/usr/local/bin/scan-loop", scanLoop, 0o755)
	writeFile(t, box, "/etc/cellguard-test.json", "{}", 0o644)

	var others []string
	for _, id := range checks.IDs() {
		switch id {
		case "cgroup-integrity", "runtime-ghosts", "stuck-runc-init":
		default:
			others = append(others, id)
		}
	}
	validateArgv := []string{cellguard, "validate", "--config", "/etc/cellguard-test.json",
		"--log-file", "/var/log/cellguard.log", "--runtime-root", runcRoot, "--format", "json",
		"--phase", "drain", "--ignore", strings.Join(others, ",")}

	// The quiet box passes, or the churn's findings would prove nothing.
	var quiet scanTally
	out, _ := box.Output(append([]string{"scan-loop", "1", "30"}, validateArgv...)...)
	readScans(t, box, &quiet, strings.TrimSpace(out))
	if quiet.scans != 1 || quiet.errors+quiet.falsePositives != 0 {
		t.Fatalf("quiet box: %d scans, %d errors, %d findings: %v", quiet.scans, quiet.errors, quiet.falsePositives, quiet.examples)
	}

	lastPID := func() int {
		b, err := box.ReadFile("/run/churn/proc/sys/kernel/ns_last_pid")
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	base := lastPID()

	ctx, cancel := context.WithTimeout(context.Background(), (maxSeconds+60)*time.Second)
	defer cancel()
	var churners []*exec.Cmd
	for _, argv := range [][]string{
		{"churn-host", strconv.Itoa(base)},
		{"churn-exec"},
		{"runc", "--root", runcRoot, "exec", "-d", "c1", "/bin/sh", "-c", churnInside},
	} {
		cmd := box.Command(ctx, argv...)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %v: %v", argv, err)
		}
		churners = append(churners, cmd)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		writeFile(t, box, "/run/churn/stop", "", 0o644)
		writeFile(t, box, bundle+"/rootfs/stop", "", 0o644)
		for _, c := range churners {
			_ = c.Wait()
		}
	}
	t.Cleanup(stop)
	time.Sleep(time.Second) // let all three loops get going

	start := time.Now()
	raw, err := box.Exec(ctx, append([]string{"scan-loop", strconv.Itoa(maxScans), strconv.Itoa(maxSeconds)}, validateArgv...)...)
	if err != nil {
		t.Fatal(err)
	}
	out = string(raw)
	took := time.Since(start)
	stop()

	var churn scanTally
	readScans(t, box, &churn, strings.TrimSpace(out))
	count := func(path string) int {
		deadline := time.Now().Add(10 * time.Second)
		for {
			b, err := box.ReadFile(path)
			if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("churn count %s: %v %q", path, err, b)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	hostN, execN, insideN := count("/run/churn/host.count"), count("/run/churn/exec.count"), count(bundle+"/rootfs/count")
	pids, err := box.ReadFile("/run/churn/host.pids")
	if err != nil {
		t.Fatal(err)
	}
	recorded := strings.Fields(string(pids))
	distinct := map[string]bool{}
	for _, p := range recorded {
		distinct[p] = true
	}
	// A runc exec is three processes: runc, runc init, the command.
	total := hostN + 3*execN + insideN
	t.Logf("churn: %d scans in %s; %d processes started (%d host shells, %d runc execs, %d in the container); "+
		"%d recorded host pids, %d distinct (%d reused); pid counter wound back to %d before each host fork",
		churn.scans, took.Round(time.Millisecond), total, hostN, execN, insideN,
		len(recorded), len(distinct), len(recorded)-len(distinct), base)
	t.Logf("churn: %d errors, %d false positives", churn.errors, churn.falsePositives)
	if dbg, err := box.ReadFile("/run/churn/debug"); err == nil {
		t.Logf("the processes the failing scans named, as they were right after:\n%s", dbg)
	}
	for _, e := range churn.examples {
		t.Log(e)
	}
	if churn.scans < 50 || total < 2000 || len(recorded)-len(distinct) < 100 {
		t.Errorf("too little churn to prove anything: %d scans, %d processes, %d pid reuses", churn.scans, total, len(recorded)-len(distinct))
	}
	if churn.errors != 0 || churn.falsePositives != 0 {
		t.Errorf("under churn: %d errors, %d false positives in %d scans", churn.errors, churn.falsePositives, churn.scans)
	}

	// Nothing escaped: the init is where runc put it. Then a real escape
	// (its memory cgroup moved to the unit's, as systemd does in seed-000)
	// is counted, so the tally above could have failed.
	for h, p := range cgroups(t, box, initPID) {
		if h != "" && p != ctrCgroup {
			t.Fatalf("after churn c1's init is in %s:%s", h, p)
		}
	}
	cpu := "/sys/fs/cgroup/memory" + unitCgroup
	box.Run(t, "sh", "-c", fmt.Sprintf("mkdir -p %s && echo %d > %s/cgroup.procs", cpu, initPID, cpu))
	var escaped scanTally
	out, _ = box.Output(append([]string{"scan-loop", "1", "30"}, validateArgv...)...)
	readScans(t, box, &escaped, strings.TrimSpace(out))
	if escaped.falsePositives == 0 {
		t.Fatalf("a real escape was not counted: %v", escaped.examples)
	}
	t.Logf("real escape counted: %s", escaped.examples[0])
}

// readScans adds the runs scan-loop left in /run/churn/v to tally, then
// removes them.
func readScans(t *testing.T, box *sdbox.Box, tally *scanTally, n string) {
	t.Helper()
	runs, err := strconv.Atoi(n)
	if err != nil {
		t.Fatalf("scan-loop printed %q", n)
	}
	for i := 1; i <= runs; i++ {
		rd := func(ext string) string {
			b, err := box.ReadFile(fmt.Sprintf("/run/churn/v/%d.%s", i, ext))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		code, err := strconv.Atoi(strings.TrimSpace(rd("rc")))
		if err != nil {
			t.Fatal(err)
		}
		tally.add(i, code, rd("out"), rd("err"))
	}
	box.Run(t, "rm", "-rf", "/run/churn/v")
}
