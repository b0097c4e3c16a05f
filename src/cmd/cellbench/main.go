// Command cellbench measures `cellguard validate` on synthetic cells against
// the shell loop an operator would otherwise run (baseline.sh), and checks
// that both report exactly the escapes the generator planted. It is a
// benchmark, not a test: it prints numbers and fails only when the findings
// disagree or a command does not run.
//
//	cellbench gen --dir D [--scale 1] [--escaped 0.01]   write one cell and keep it
//	cellbench run --bin bin/cellguard [--scales 1,10,100] [--runs 11] [--baseline REV]
//	cellbench cycle SPEC-JSON   time start/stop variants (inside the systemd box; see src/tests/perf)
//	cellbench live [--scale 1] [--escaped 0.01] -- CMD...   run CMD beside a live cell (perf record, say)
//
// With --baseline, run builds the cellguard of git revision REV from a
// worktree of this repository and runs it in turn with --bin on the same
// cells, and prints the two side by side: ratios from one run, on one
// machine at one load, are what a shared machine can compare.
//
// run writes each cell into a fresh directory under --dir and removes it
// after; with --tmpfs (root, inside `unshare --mount`) that directory is a
// tmpfs of its own, so nothing is left behind even if cellbench is killed.
//
// With --live, a cell is real processes instead (live.go): validate runs
// on the live root and reads the kernel's /proc and cgroupfs, and its
// leaked-netns the BPF iterator where the kernel allows it, as on a cell.
// The cell's processes, cgroups and kernel.pid_max (raised for a large
// cell) are undone at the end and on Ctrl-C or SIGTERM; a SIGKILL still
// ends the processes (each dies with its parent) but leaves the empty
// cgroups, named cellbench-<pid>*.
package main

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

//go:embed baseline.sh
var baselineScript []byte

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "gen":
		err = gen(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "cycle":
		err = cycle(os.Args[2:])
	case "live":
		err = live(os.Args[2:])
	case "farm":
		err = farm(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cellbench: error: %v\n", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: cellbench gen --dir D [--scale K] [--escaped SHARE] | cellbench run --bin CELLGUARD [flags] | cellbench live [--scale K] [--escaped SHARE] -- CMD... | cellbench farm DIR")
	os.Exit(2)
}

// farm compiles the live cell's process into DIR/cellfarm, for `run
// --live --farm` where there is no C compiler (a VM's stemcell image).
func farm(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: cellbench farm DIR")
	}
	bin, err := buildFarm(args[0])
	if err != nil {
		return err
	}
	fmt.Println(bin)
	return nil
}

func gen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fs.String("dir", "", "directory to write the cell into (empty or absent)")
	scale := fs.Int("scale", 1, "cell size: 250·K containers of 20 processes, 1,000·K host processes")
	escaped := fs.Float64("escaped", 0.01, "share of container processes moved out of their cgroups")
	seed := fs.Uint64("seed", 1, "picks the escaped processes")
	containers := fs.Int("containers", 0, "override the number of containers")
	procs := fs.Int("procs", 0, "override the processes per container")
	host := fs.Int("host", 0, "override the number of host processes")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("--dir is required")
	}
	s := fakehost.Cell(*scale)
	for _, o := range []struct{ flag, field *int }{{containers, &s.Containers}, {procs, &s.ProcsPerContainer}, {host, &s.HostProcs}} {
		if *o.flag > 0 {
			*o.field = *o.flag
		}
	}
	s.EscapedShare, s.Seed = *escaped, *seed
	w, err := fakehost.Generate(*dir, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "cellbench: wrote %d containers, %d processes, %d escaped, %d files, %.1f MB in %s to %s\n",
		s.Containers, s.Processes(), len(w.EscapedPIDs), w.Files, float64(w.Bytes)/1e6, w.Elapsed.Round(time.Millisecond), *dir)
	for _, e := range w.Escapes {
		fmt.Println(e)
	}
	return nil
}

type runFlags struct {
	bin          string
	scales       []int
	runs         int
	baselineRuns int
	baselineMax  int
	escaped      float64
	seed         uint64
	dir          string
	tmpfs        bool
	baseline     string // git revision to build and compare against
	baseBin      string
	live         bool
	farm         string // --live: a prebuilt cellfarm (cellbench farm)
	// alsoConfig runs --bin a second time with --config alsoConfig, in
	// turn with the others: the same binary with other switches (the BPF
	// iterators 88f9e12 ran by default).
	alsoConfig string
}

// result is one size's measurements.
type result struct {
	spec         fakehost.Spec
	escapedPIDs  int
	genTime      time.Duration
	genBytes     int64
	clean, dirty timings // cellguard
	cleanRSS     int64   // KB, max over runs
	dirtyRSS     int64
	// The baseline revision's cellguard on the same cells, in turn.
	baseClean, baseDirty       timings
	baseCleanRSS, baseDirtyRSS int64
	// --bin with --also-config on the same cells, in turn.
	alsoClean, alsoDirty       timings
	alsoCleanRSS, alsoDirtyRSS int64
	baseline                   timings
	baselineRSS                int64
	baselineSkips              string
	found                      string // findings comparison, printed
	live                       bool   // a cell of real processes (live.go)
}

// size names the cell in tables: "10x", or "10x live".
func (r *result) size() string {
	s := fmt.Sprintf("%dx", r.spec.Containers/250)
	if r.live {
		s += " live"
	}
	return s
}

func run(args []string) error {
	f := runFlags{}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&f.bin, "bin", "bin/cellguard", "the cellguard binary to measure")
	scales := fs.String("scales", "1,10,100", "cell sizes as multiples of 250 containers x 20 processes + 1,000 host processes")
	fs.IntVar(&f.runs, "runs", 11, "cellguard runs per size and state (median reported)")
	fs.IntVar(&f.baselineRuns, "baseline-runs", 3, "baseline runs per size; one when a run takes over 20 s")
	fs.IntVar(&f.baselineMax, "baseline-max-procs", 60000, "skip the baseline above this many processes (it forks per process); 0: never skip")
	fs.Float64Var(&f.escaped, "escaped", 0.01, "share of container processes moved out of their cgroups")
	fs.Uint64Var(&f.seed, "seed", 1, "picks the escaped processes")
	fs.StringVar(&f.dir, "dir", "/dev/shm", "where the cells are written (one at a time, removed after)")
	fs.BoolVar(&f.tmpfs, "tmpfs", false, "mount a tmpfs of its own for each cell (root, in a private mount namespace: unshare --mount)")
	fs.StringVar(&f.baseline, "baseline", "", "git revision whose cellguard runs in turn with --bin on the same cells (built from a worktree of this repository)")
	fs.StringVar(&f.alsoConfig, "also-config", "", "also run --bin with --config FILE, in turn on the same cells, and compare it with the baseline too")
	fs.BoolVar(&f.live, "live", false, "cells of real processes on this host, validated on the live root (root; needs a C compiler or --farm), instead of fixture trees")
	fs.StringVar(&f.farm, "farm", "", "--live: the cell's process, built before by `cellbench farm DIR` (where this host has no C compiler)")
	_ = fs.Parse(args)
	for _, s := range strings.Split(*scales, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			return fmt.Errorf("--scales: bad size %q", s)
		}
		f.scales = append(f.scales, k)
	}
	// Measure a private copy: bin/ is shared, and a `make build` elsewhere
	// during the run must not swap the binary between sizes.
	bin, err := os.ReadFile(f.bin)
	if err != nil {
		return fmt.Errorf("cellguard binary: %w (run make build)", err)
	}
	tmp, err := os.MkdirTemp("", "cellbench-bin-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	f.bin = filepath.Join(tmp, "cellguard")
	if err := os.WriteFile(f.bin, bin, 0o755); err != nil {
		return err
	}
	version, _ := exec.Command(f.bin, "version").Output()
	if f.baseline != "" {
		if f.baseBin, err = buildRevision(f.baseline, tmp); err != nil {
			return err
		}
	}
	if f.tmpfs {
		if err := privateMountNS(); err != nil {
			return err
		}
	}
	fmt.Printf("cellbench: %s, %d CPUs, %s; cellguard %s; %d runs per size, escaped share %.3f\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), loadavg(), strings.TrimSpace(string(version)), f.runs, f.escaped)
	var results []*result
	measure := f.measure
	if f.live {
		measure = func(k int) (*result, error) { return f.measureLive(k, tmp) }
	}
	for _, k := range f.scales {
		r, err := measure(k)
		if r != nil {
			results = append(results, r)
		}
		if err != nil {
			return err
		}
	}
	printTable(os.Stdout, results)
	if f.baseBin != "" {
		printBaseline(os.Stdout, f.baseline, f.alsoConfig, results)
	}
	return nil
}

// privateMountNS refuses to mount when cellbench shares its parent's mount
// namespace (make's, the host's): a tmpfs left there by a killed run would
// outlive it. (pid 1's namespace may not be readable in a sandbox.)
func privateMountNS() error {
	self, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("--tmpfs: %w", err)
	}
	parent, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", os.Getppid()))
	if err == nil && parent == self {
		return errors.New("--tmpfs: run inside a private mount namespace (unshare --mount --propagation private cellbench run)")
	}
	return nil
}

// sharedMount reports whether the mount at dir propagates to other
// namespaces (a "shared:N" tag in mountinfo).
func sharedMount(dir string) (bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 6 && f[4] == dir {
			for _, opt := range f[6:] {
				if opt == "-" {
					break
				}
				if strings.HasPrefix(opt, "shared:") {
					return true, nil
				}
			}
			return false, nil
		}
	}
	return false, fmt.Errorf("%s is not in /proc/self/mountinfo", dir)
}

func (f *runFlags) measure(k int) (*result, error) {
	s := fakehost.Cell(k)
	s.EscapedShare, s.Seed = f.escaped, f.seed
	r := &result{spec: s}
	dir, err := os.MkdirTemp(f.dir, "cellbench-")
	if err != nil {
		return nil, err
	}
	cleanup := func() error { return os.RemoveAll(dir) }
	if f.tmpfs {
		// Room with a margin: per process a page for stat, and 5 inodes
		// (tmpfs counts a hard link as one); per container 9 cgroup
		// directories with their cgroup.procs links, 3 limit-file links and a
		// 26 KB state.
		// The 100x cell takes about 3.4 GB of pages and 3.5M inodes.
		size := 64<<20 + int64(s.Processes())*8<<10
		inodes := 10000 + s.Processes()*6 + s.Containers*30
		if err := unix.Mount("cellbench", dir, "tmpfs", 0, fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", size, inodes)); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("mount tmpfs on %s: %w", dir, err)
		}
		cleanup = func() error {
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", dir, err)
			}
			return os.Remove(dir)
		}
		if shared, err := sharedMount(dir); err != nil || shared {
			if err := cleanup(); err != nil {
				fmt.Fprintf(os.Stderr, "cellbench: cleanup: %v\n", err)
			}
			return nil, fmt.Errorf("--tmpfs: the mount on %s would propagate to the host (%v): run under unshare --mount --propagation private", dir, err)
		}
	}
	defer func() {
		if err := cleanup(); err != nil {
			fmt.Fprintf(os.Stderr, "cellbench: cleanup: %v\n", err)
		}
	}()
	root := filepath.Join(dir, "cell")
	fmt.Printf("\n== %dx: %d containers x %d + %d host = %d processes\n", k, s.Containers, s.ProcsPerContainer, s.HostProcs, s.Processes())
	w, err := fakehost.Generate(root, s)
	if err != nil {
		return nil, err
	}
	r.escapedPIDs, r.genTime, r.genBytes = len(w.EscapedPIDs), w.Elapsed, w.Bytes
	fmt.Printf("generated %d files, %.1f MB in %s (%s on disk)\n", w.Files, float64(w.Bytes)/1e6, w.Elapsed.Round(time.Millisecond), du(dir))
	truth := make([]string, len(w.Escapes))
	for i, e := range w.Escapes {
		truth[i] = e.String()
	}

	// Escaped cell: cellguard, then the baseline; both must report the truth.
	var got []string
	target := []string{"--root", root}
	runs, err := f.cellguards(target, f.runs, len(truth) > 0)
	if err != nil {
		return r, err
	}
	r.record(runs, true)
	got = runs[0].escapes
	for _, b := range runs {
		if !slices.Equal(b.escapes, truth) {
			return r, fmt.Errorf("%dx: %s reported %d escapes, the cell has %d:\n%s", k, b.bin, len(b.escapes), len(truth), diff(b.escapes, truth))
		}
	}
	r.found = fmt.Sprintf("%dx: planted %d escapes (%d pids); cellguard found the same %d", k, len(truth), len(w.EscapedPIDs), len(got))
	if f.baselineMax == 0 || s.Processes() <= f.baselineMax {
		var bgot []string
		r.baseline, r.baselineRSS, bgot, err = f.baselineRun(dir, root, s.RuntimeRoot)
		if err != nil {
			return r, err
		}
		if !slices.Equal(bgot, truth) {
			return r, fmt.Errorf("%dx: baseline reported %d escapes, the cell has %d:\n%s", k, len(bgot), len(truth), diff(bgot, truth))
		}
		r.found += fmt.Sprintf(", baseline the same %d: equal sets", len(bgot))
	} else {
		r.baselineSkips = fmt.Sprintf("skipped above %d processes", f.baselineMax)
	}
	fmt.Println(r.found)
	if len(truth) > 0 {
		fmt.Printf("escaped pids: %s\n", abbrev(w.EscapedPIDs, 12))
	}

	// The same cell healed: the drain of a healthy cell.
	if err := f.measureHealed(r, target, w.Heal); err != nil {
		return r, err
	}
	fmt.Printf("cellguard clean median %s ms (CPU %s), escaped median %s ms (CPU %s), baseline %s\n",
		ms(median(r.clean.wall)), ms(median(r.clean.cpu)), ms(median(r.dirty.wall)), ms(median(r.dirty.cpu)),
		msOr(r.baseline, r.baselineSkips))
	return r, nil
}

// measureHealed heals the cell and measures it clean into r: no binary may
// report an escape.
func (f *runFlags) measureHealed(r *result, target []string, heal func() error) error {
	if err := heal(); err != nil {
		return err
	}
	runs, err := f.cellguards(target, f.runs, false)
	if err != nil {
		return err
	}
	for _, b := range runs {
		if len(b.escapes) > 0 {
			return fmt.Errorf("%s: %s: healed cell still has escapes: %v", r.size(), b.bin, b.escapes)
		}
	}
	r.record(runs, false)
	return nil
}

// The binaries' roles in a cell's runs.
const (
	roleThis = "this" // --bin
	roleAlso = "also" // --bin with --also-config
	roleBase = "base" // --baseline's
)

// record keeps each role's runs of the escaped or the healed cell in r.
func (r *result) record(runs []binRuns, escaped bool) {
	type slot struct {
		t   *timings
		rss *int64
	}
	slots := map[string]slot{roleThis: {&r.clean, &r.cleanRSS}, roleAlso: {&r.alsoClean, &r.alsoCleanRSS}, roleBase: {&r.baseClean, &r.baseCleanRSS}}
	if escaped {
		slots = map[string]slot{roleThis: {&r.dirty, &r.dirtyRSS}, roleAlso: {&r.alsoDirty, &r.alsoDirtyRSS}, roleBase: {&r.baseDirty, &r.baseDirtyRSS}}
	}
	for _, b := range runs {
		s := slots[b.role]
		*s.t, *s.rss = b.times, b.rss
	}
}

// timings are the wall and CPU (user+sys, the child and what it reaped)
// times of repeated runs. CPU time shows the work when the machine is shared
// and wall time shows contention.
type timings struct{ wall, cpu []time.Duration }

func (t *timings) add(wall time.Duration, ps *os.ProcessState) {
	t.wall = append(t.wall, wall)
	t.cpu = append(t.cpu, ps.UserTime()+ps.SystemTime())
}

// binRuns are one binary's runs on one cell.
type binRuns struct {
	bin  string
	args []string // after the target: --config for --also-config
	role string   // roleThis, roleAlso or roleBase
	// old skips the drain stdout check: releases before the contract
	// printed "0" even when a check blocked.
	old     bool
	times   timings
	rss     int64 // KB, max over runs
	escapes []string
}

// cellguards runs validate --phase drain runs times with --bin and, when
// set, the baseline's binary in turn (so load that comes and goes falls on
// both alike), and returns each one's timings, peak RSS and the escapes of
// its last run's JSON report.
func (f *runFlags) cellguards(target []string, runs int, wantBlocked bool) ([]binRuns, error) {
	out := []binRuns{{bin: f.bin, role: roleThis}}
	if f.alsoConfig != "" {
		out = append(out, binRuns{bin: f.bin, args: []string{"--config", f.alsoConfig}, role: roleAlso})
	}
	if f.baseBin != "" {
		out = append(out, binRuns{bin: f.baseBin, old: true, role: roleBase})
	}
	for i := 0; i < runs+1; i++ { // the first run warms the page cache and is dropped
		for j := range out {
			if err := out[j].once(target, wantBlocked, i > 0, i == runs); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// once runs validate one time on target (--root <cell>, or --runtime-root
// <dir> on the live root); keep records it, last reads its escapes.
func (b *binRuns) once(target []string, wantBlocked, keep, last bool) error {
	argv := append(append([]string{b.bin, "validate", "--phase", "drain"}, target...), b.args...)
	cmd, rssOf := measured(append(argv, "--format", "json", "--log-file", "/dev/null")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	el := time.Since(start)
	runRSS := rssOf(cmd) // always: it also removes GNU time's output file
	code := cmd.ProcessState.ExitCode()
	want := 0
	if wantBlocked {
		want = 1
	}
	if code != want {
		return fmt.Errorf("%s: exit %d, want %d (%v)\n%s", cmd, code, want, err, tail(stderr.Bytes()))
	}
	// The drain contract: "0" when nothing blocks, nothing when it does.
	if wantOut := map[bool]string{false: "0", true: ""}[wantBlocked]; !b.old && strings.TrimSpace(stdout.String()) != wantOut {
		return fmt.Errorf("%s: drain stdout %q, want %q", cmd, stdout.String(), wantOut)
	}
	if !keep {
		return nil
	}
	b.times.add(el, cmd.ProcessState)
	b.rss = max(b.rss, runRSS)
	if !last {
		return nil
	}
	b.escapes, err = reportEscapes(stderr.Bytes())
	return err
}

// reportEscapes reads cgroup-integrity's failed findings from the JSON
// report at the start of b in the baseline's "pid hierarchy expected
// actual" form.
func reportEscapes(b []byte) ([]string, error) {
	var rep struct {
		Results []struct {
			ID       string `json:"id"`
			Error    string `json:"error"`
			Findings []struct {
				Status string            `json:"status"`
				Data   map[string]string `json:"data"`
			} `json:"findings"`
		} `json:"results"`
	}
	// The report is the first value on stderr: validate --phase drain
	// follows it with a line saying what the drain decided.
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&rep); err != nil {
		return nil, fmt.Errorf("decode cellguard report: %w\n%s", err, tail(b))
	}
	var out []string
	seen := false
	for _, r := range rep.Results {
		if r.ID != "cgroup-integrity" {
			continue
		}
		seen = true
		if r.Error != "" {
			return nil, fmt.Errorf("cgroup-integrity errored: %s", r.Error)
		}
		for _, f := range r.Findings {
			if f.Status == "fail" {
				d := f.Data
				out = append(out, strings.Join([]string{d["pid"], d["hierarchy"], d["expected"], d["actual"]}, " "))
			}
		}
	}
	if !seen {
		return nil, errors.New("cellguard report has no cgroup-integrity result")
	}
	sort.Strings(out)
	return out, nil
}

func (f *runFlags) baselineRun(dir, root, rr string) (timings, int64, []string, error) {
	var times timings
	script := filepath.Join(dir, "baseline.sh")
	if err := os.WriteFile(script, baselineScript, 0o755); err != nil {
		return times, 0, nil, err
	}
	var rss int64
	var out []string
	for i := 0; i < f.baselineRuns; i++ {
		cmd, rssOf := measured("bash", script, root, rr)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		el := time.Since(start)
		runRSS := rssOf(cmd) // the script's or its largest child's (jq, cat)
		if err != nil {
			return times, 0, nil, fmt.Errorf("baseline: %v\n%s", err, tail(stderr.Bytes()))
		}
		times.add(el, cmd.ProcessState)
		rss = max(rss, runRSS)
		out = out[:0]
		for _, l := range strings.Split(stdout.String(), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
		sort.Strings(out)
		fmt.Printf("baseline run %d: %s wall, %s CPU\n", i+1, el.Round(time.Millisecond), times.cpu[i].Round(time.Millisecond))
		if el > 20*time.Second {
			break
		}
	}
	return times, rss, out, nil
}

// gnuTime reports a child's peak RSS (Debian package time). It forks
// rather than vforks: a child Go starts shares cellbench's memory until it
// execs, and Linux then counts cellbench's peak RSS as the child's.
const gnuTime = "/usr/bin/time"

// measured returns a command for argv and a function giving its peak RSS
// in KB after it ran: from GNU time when installed, else wait4's ru_maxrss,
// which is at least cellbench's own RSS (see gnuTime).
func measured(argv ...string) (*exec.Cmd, func(*exec.Cmd) int64) {
	if _, err := os.Stat(gnuTime); err != nil {
		return exec.Command(argv[0], argv[1:]...), func(c *exec.Cmd) int64 {
			if c.ProcessState == nil {
				return 0
			}
			if ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage); ok {
				return ru.Maxrss
			}
			return 0
		}
	}
	f, err := os.CreateTemp("", "cellbench-rss-")
	if err != nil {
		return exec.Command(argv[0], argv[1:]...), func(*exec.Cmd) int64 { return 0 }
	}
	f.Close()
	cmd := exec.Command(gnuTime, append([]string{"--quiet", "-f", "%M", "-o", f.Name()}, argv...)...)
	return cmd, func(*exec.Cmd) int64 {
		defer os.Remove(f.Name())
		b, _ := os.ReadFile(f.Name())
		kb, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return kb
	}
}

func printTable(w io.Writer, rs []*result) {
	fmt.Fprintln(w, "\ncellguard validate --phase drain --format json on synthetic cells: median of the runs, fork to exit;")
	fmt.Fprintln(w, "CPU is user+sys of the process tree.")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tprocesses\tescaped\tclean ms\tclean CPU ms\tescaped ms\tescaped CPU ms\tbaseline ms\tbaseline CPU ms\tspeedup\tCPU speedup\tµs/process\tRSS MB\tbaseline RSS MB\t")
	var xs, yClean, yCPU []float64
	for _, r := range rs {
		p := r.spec.Processes()
		c, cc, d, dc := median(r.clean.wall), median(r.clean.cpu), median(r.dirty.wall), median(r.dirty.cpu)
		xs = append(xs, float64(p))
		yClean = append(yClean, msf(c))
		yCPU = append(yCPU, msf(cc))
		b, bc, speed, cspeed, brss := "-", "-", "-", "-", "-"
		if len(r.baseline.wall) > 0 {
			bm, bcm := median(r.baseline.wall), median(r.baseline.cpu)
			b, bc = ms(bm), ms(bcm)
			speed = fmt.Sprintf("%.0fx", float64(bm)/float64(d))
			cspeed = fmt.Sprintf("%.0fx", float64(bcm)/float64(max(dc, time.Millisecond)))
			brss = fmt.Sprintf("%.1f", float64(r.baselineRSS)/1024)
		}
		fmt.Fprintf(tw, "%s (%dx%d)\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t\n",
			r.size(), r.spec.Containers, r.spec.ProcsPerContainer, p, r.escapedPIDs,
			ms(c), ms(cc), ms(d), ms(dc), b, bc, speed, cspeed,
			float64(c.Microseconds())/float64(p), float64(max(r.cleanRSS, r.dirtyRSS))/1024, brss)
	}
	tw.Flush()
	fmt.Fprintln(w, "clean: the healed cell, no escapes. escaped: the cell with escapes (under a --root other than /")
	fmt.Fprintln(w, "cgroup-integrity skips its confirmation waits; on a live host suspects add up to 1.5 s of sleep).")
	fmt.Fprintln(w, "speedup: baseline / escaped, which report the same escapes. µs/process: clean wall time / processes.")
	if len(xs) >= 2 {
		sc, ic, r2c := fit(xs, yClean)
		su, iu, r2u := fit(xs, yCPU)
		fmt.Fprintf(w, "slope, clean wall: %.2f ms per 1,000 processes, intercept %.1f ms, R² %.4f\n", sc*1000, ic, r2c)
		fmt.Fprintf(w, "slope, clean CPU:  %.2f ms per 1,000 processes, intercept %.1f ms, R² %.4f\n", su*1000, iu, r2u)
	}
	for _, r := range rs {
		fmt.Fprintln(w, r.found)
	}
}

// fit is an ordinary least-squares line y = a·x + b and its R².
func fit(xs, ys []float64) (a, b, r2 float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	a = (n*sxy - sx*sy) / (n*sxx - sx*sx)
	b = (sy - a*sx) / n
	mean := sy / n
	var ssr, sst float64
	for i := range xs {
		e := ys[i] - (a*xs[i] + b)
		ssr += e * e
		sst += (ys[i] - mean) * (ys[i] - mean)
	}
	r2 = 1 - ssr/sst
	if math.IsNaN(r2) {
		r2 = 1
	}
	return a, b, r2
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string {
	if d >= 10*time.Second {
		return fmt.Sprintf("%.0f", msf(d))
	}
	return fmt.Sprintf("%.1f", msf(d))
}

func msOr(t timings, why string) string {
	if len(t.wall) == 0 {
		return why
	}
	return fmt.Sprintf("%s ms (CPU %s)", ms(median(t.wall)), ms(median(t.cpu)))
}

func diff(got, want []string) string {
	g, wnt := map[string]bool{}, map[string]bool{}
	for _, s := range got {
		g[s] = true
	}
	for _, s := range want {
		wnt[s] = true
	}
	var b strings.Builder
	for _, s := range want {
		if !g[s] {
			fmt.Fprintf(&b, "  missing: %s\n", s)
		}
	}
	for _, s := range got {
		if !wnt[s] {
			fmt.Fprintf(&b, "  extra:   %s\n", s)
		}
	}
	return b.String()
}

func abbrev(pids []int, n int) string {
	var parts []string
	for i, p := range pids {
		if i == n {
			parts = append(parts, fmt.Sprintf("... (%d in all)", len(pids)))
			break
		}
		parts = append(parts, strconv.Itoa(p))
	}
	return strings.Join(parts, " ")
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "load unknown"
	}
	f := strings.Fields(string(b))
	return "load " + strings.Join(f[:3], " ")
}

func du(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "?"
	}
	if st.Type != unix.TMPFS_MAGIC {
		return "not a tmpfs of its own"
	}
	used := (st.Blocks - st.Bfree) * uint64(st.Bsize)
	return fmt.Sprintf("%.0f MB of pages, %d inodes", float64(used)/1e6, st.Files-st.Ffree)
}

// buildRevision builds cellguard at git revision rev as make build does,
// from a detached worktree of the repository cellbench runs in (removed
// after), into dir.
func buildRevision(rev, dir string) (string, error) {
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("--baseline: find the repository: %w (run cellbench inside it)", err)
	}
	repo := strings.TrimSpace(string(top))
	git := func(args ...string) error {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	src := filepath.Join(dir, "baseline-src")
	if err := git("worktree", "add", "--detach", src, rev); err != nil {
		return "", fmt.Errorf("--baseline: %w", err)
	}
	defer func() {
		if err := git("worktree", "remove", "--force", src); err != nil {
			fmt.Fprintf(os.Stderr, "cellbench: cleanup: %v\n", err)
		}
	}()
	bin := filepath.Join(dir, "cellguard-baseline")
	gobin := cmp.Or(os.Getenv("GO"), "go")
	cmd := exec.Command(gobin, "build", "-trimpath", "-ldflags",
		"-X github.com/cloudfoundry/cellguard/src/internal/cli.Version="+rev, "-o", bin, "./src/cmd/cellguard")
	cmd.Dir, cmd.Env = src, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("--baseline: build cellguard at %s: %w\n%s", rev, err, out)
	}
	return bin, nil
}

// printBaseline prints each size's runs of --bin beside the baseline's, and
// their ratios (--bin / baseline): medians of runs made in turn.
func printBaseline(w io.Writer, rev, also string, rs []*result) {
	fmt.Fprintf(w, "\nagainst %s (built from a worktree of this repository), the same cells, runs in turn; ratio = this / %s:\n", rev, rev)
	if also != "" {
		fmt.Fprintf(w, "(cells \"+config\": this binary with --config %s)\n", also)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tcell\tthis ms\tbase ms\twall ratio\tthis CPU ms\tbase CPU ms\tCPU ratio\tthis RSS MB\tbase RSS MB\t")
	for _, r := range rs {
		for _, c := range []struct {
			name       string
			this, base timings
			tRSS, bRSS int64
		}{{"clean", r.clean, r.baseClean, r.cleanRSS, r.baseCleanRSS}, {"escaped", r.dirty, r.baseDirty, r.dirtyRSS, r.baseDirtyRSS},
			{"clean +config", r.alsoClean, r.baseClean, r.alsoCleanRSS, r.baseCleanRSS}, {"escaped +config", r.alsoDirty, r.baseDirty, r.alsoDirtyRSS, r.baseDirtyRSS}} {
			if len(c.this.wall) == 0 {
				continue // no --also-config
			}
			tw1, bw, tc, bc := median(c.this.wall), median(c.base.wall), median(c.this.cpu), median(c.base.cpu)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.2f\t%s\t%s\t%.2f\t%.1f\t%.1f\t\n", r.size(), c.name,
				ms(tw1), ms(bw), float64(tw1)/float64(max(bw, 1)), ms(tc), ms(bc), float64(tc)/float64(max(bc, 1)),
				float64(c.tRSS)/1024, float64(c.bRSS)/1024)
		}
	}
	tw.Flush()
	// The waits are cgroup-integrity's recheckDelays and leaked-netns's
	// netnsConfirm (package checks); a --root other than / skips them.
	fmt.Fprintln(w, "confirmation wait, not in these times: on the live root a cell with suspects sleeps 100+200+400+800 ms")
	fmt.Fprintln(w, "(1.5 s, cgroup-integrity) before it confirms them, and one with a namespace held only by a file 200 ms more")
	fmt.Fprintln(w, "(leaked-netns); under --root <cell> both are skipped, so \"escaped\" above is the work alone.")
}
