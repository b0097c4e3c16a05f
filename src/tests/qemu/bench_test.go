package qemu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm"
)

// BenchmarkNobleLiveCell is cellguard validate on a live cell of 250
// containers, in a noble VM and on this host, in one run: `cellbench run
// --live --scales 1` (250 containers of 20 processes, each container an
// init in a pid namespace of its own with a runc state file, 1,000 host
// processes, 1% of the container processes escaped; the medians of the
// escaped and of the healed cell), on this host's live root (cgroup v1
// hybrid, its own kernel, native) and in the VM (Ubuntu's 6.8 on cgroup
// v2, TCG here). Under TCG the ratio is mostly the emulator's, so each
// side also validates the same cell as a fixture tree (`cellbench run
// --scales 1`: files only, the same work on any layout): the fixture's
// ratio is the emulator's cost, and the live ratio over it what is left
// for the layout and the kernel (docs/performance.md, "A noble VM beside
// the host").
//
// Not a test (`make bench`): -bench NobleLiveCell -benchtime 1x; one
// iteration is the whole comparison. CELLGUARD_BENCH_RUNS sets cellbench's
// --runs (default 5).
func BenchmarkNobleLiveCell(b *testing.B) {
	qemuvm.RequireImage(b)
	runs := 5
	if v, err := strconv.Atoi(os.Getenv("CELLGUARD_BENCH_RUNS")); err == nil && v > 0 {
		runs = v
	}
	cellguard, cellbench := buildCellguard(b), buildStatic(b, "cellbench")
	farmDir := b.TempDir()
	out, err := exec.Command(cellbench, "farm", farmDir).CombinedOutput()
	if err != nil {
		b.Fatalf("cellbench farm: %v\n%s", err, out)
	}
	farm := strings.TrimSpace(string(out))
	// args is the live cell's run, or with fixture the fixture tree's;
	// its shell-loop baseline is skipped (--baseline-max-procs 1): it
	// forks per process, minutes under TCG, and is not what this compares.
	args := func(bin, cb, fm string, fixture bool) []string {
		if fixture {
			return []string{cb, "run", "--scales", "1", "--runs", strconv.Itoa(runs), "--baseline-max-procs", "1", "--bin", bin}
		}
		return []string{cb, "run", "--live", "--scales", "1", "--runs", strconv.Itoa(runs), "--bin", bin, "--farm", fm}
	}
	onHost := func(fixture bool) liveMedians {
		a := args(cellguard, cellbench, farm, fixture)
		t0 := time.Now()
		out, err := exec.Command(a[0], a[1:]...).CombinedOutput()
		if err != nil {
			b.Fatalf("%s on the host: %v\n%s", strings.Join(a, " "), err, out)
		}
		m, err := parseLiveMedians(string(out))
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		b.Logf("this host (cgroup v1 hybrid), fixture %t, %v:\n%s", fixture, time.Since(t0).Round(time.Second), testkit.Tail(string(out), 6))
		return m
	}
	for i := 0; i < b.N; i++ {
		hostLive, hostFix := onHost(false), onHost(true)
		vm := qemuvm.Start(b, qemuvm.Options{})
		b.Logf("VM: %s, booted in %v; load average %s", vm.Accel, vm.BootTime.Round(time.Second), qemuvm.LoadAverage())
		for src, dst := range map[string]string{cellguard: "/root/cellguard", cellbench: "/root/cellbench", farm: "/root/cellfarm"} {
			if err := vm.CopyIn(b.Context(), src, dst, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		inVM := func(fixture bool) liveMedians {
			ctx, cancel := context.WithTimeout(b.Context(), 60*time.Minute)
			defer cancel()
			t0 := time.Now()
			res, err := vm.Exec(ctx, args("/root/cellguard", "/root/cellbench", "/root/cellfarm", fixture)...)
			text := string(res.Stdout) + string(res.Stderr)
			if err != nil || res.Exit != 0 {
				b.Fatalf("cellbench in the VM (fixture %t): exit %d, %v\n%s", fixture, res.Exit, err, text)
			}
			m, err := parseLiveMedians(text)
			if err != nil {
				b.Fatalf("%v\n%s", err, text)
			}
			b.Logf("the noble VM (cgroup v2, %s), fixture %t, %v:\n%s", vm.Accel, fixture, time.Since(t0).Round(time.Second), testkit.Tail(text, 6))
			return m
		}
		vmLive, vmFix := inVM(false), inVM(true)
		live, fix := vmLive.cleanWall/hostLive.cleanWall, vmFix.cleanWall/hostFix.cleanWall
		liveCPU, fixCPU := vmLive.cleanCPU/hostLive.cleanCPU, vmFix.cleanCPU/hostFix.cleanCPU
		b.ReportMetric(hostLive.cleanWall, "host-live-ms")
		b.ReportMetric(vmLive.cleanWall, "vm-live-ms")
		b.ReportMetric(live, "vm/host-live")
		b.ReportMetric(fix, "vm/host-fixture")
		b.ReportMetric(live/fix, "live/fixture-wall")
		b.ReportMetric(liveCPU/fixCPU, "live/fixture-cpu")
		b.Logf("the healed cell, medians of %d: live wall %.0f ms in the VM, %.0f ms here (%.1fx; CPU %.1fx); fixture %.0f and %.0f ms (%.1fx; CPU %.1fx): "+
			"beyond the emulator's cost, the VM's live cell takes %.2fx (CPU %.2fx)", runs, vmLive.cleanWall, hostLive.cleanWall, live, liveCPU,
			vmFix.cleanWall, hostFix.cleanWall, fix, fixCPU, live/fix, liveCPU/fixCPU)
	}
}

// liveMedians are cellbench --live's medians for one cell, in ms.
type liveMedians struct{ cleanWall, cleanCPU, escapedWall, escapedCPU float64 }

var liveMediansRE = regexp.MustCompile(`cellguard clean median ([0-9.]+) ms \(CPU ([0-9.]+)\), escaped median ([0-9.]+) ms \(CPU ([0-9.]+)\)`)

// parseLiveMedians reads cellbench run --live's last medians line.
func parseLiveMedians(out string) (liveMedians, error) {
	all := liveMediansRE.FindAllStringSubmatch(out, -1)
	if len(all) == 0 {
		return liveMedians{}, fmt.Errorf("no %q line in cellbench's output", "cellguard clean median")
	}
	m := all[len(all)-1]
	var v [4]float64
	for i := range v {
		f, err := strconv.ParseFloat(m[i+1], 64)
		if err != nil {
			return liveMedians{}, fmt.Errorf("cellbench's medians %q: %w", m[0], err)
		}
		v[i] = f
	}
	return liveMedians{cleanWall: v[0], cleanCPU: v[1], escapedWall: v[2], escapedCPU: v[3]}, nil
}
