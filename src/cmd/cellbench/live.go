package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

//go:embed cellfarm/cellfarm.c
var cellfarmC []byte

// A live cell is fakehost's cell made of real processes on this host: what
// a fixture tree only describes, read through the kernel's /proc and
// cgroupfs, with the code paths a cell runs (leaked-netns's BPF iterator
// where the kernel allows it, instead of a walk of the fixture's fd/). Each
// container is an init in a pid namespace of its own with its other
// processes, in a cgroup of its own in every hierarchy, with a runc state
// file in a runtime root of its own; escapes are processes moved out of
// their container's cgroups in the hierarchies systemd moves.
type liveCell struct {
	spec   fakehost.Spec
	prefix string // the cgroups: <prefix>/c000000..., <prefix>-host, <prefix>-escaped
	dir    string // the farm's binary and the runtime root
	hiers  []liveHier
	farm   *exec.Cmd
	inits  []int
	// escaped maps each moved pid to its container's index.
	escaped map[int]int
	truth   []string // the escapes cellguard must report, as reportEscapes gives them
	// pidMax is kernel.pid_max as found, written back at the end; "" when
	// this cell did not change it.
	pidMax string
	// stopped makes stop run once: on Ctrl-C both the signal's goroutine
	// and the interrupted command's return reach it.
	stopped sync.Once
	stopErr error
}

// liveHier is one of the host's hierarchies (Name as cellguard reports it,
// Dir its mount on the live root).
type liveHier struct {
	*cgroup.Hierarchy
	moved bool // systemd moves processes in it (fakehost.Hierarchies)
}

// keys are the hierarchy's keys in a state file's cgroup_paths.
func (h liveHier) keys() []string {
	if h.Unified {
		return []string{""}
	}
	return h.Controllers
}

func (c *liveCell) runtimeRoot() string { return filepath.Join(c.dir, "run") }

// ids and paths of the cell's cgroups, relative to a hierarchy's mount.
func (c *liveCell) containerRel(i int) string { return "/" + c.prefix + "/" + fakehost.ContainerID(i) }
func (c *liveCell) hostRel() string           { return "/" + c.prefix + "-host" }
func (c *liveCell) escapedRel() string        { return "/" + c.prefix + "-escaped" }

// cgroupDirs are every cgroup of the cell, each after its parent.
func (c *liveCell) cgroupDirs() []string {
	dirs := []string{c.hostRel(), c.escapedRel(), "/" + c.prefix}
	for i := 0; i < c.spec.Containers; i++ {
		dirs = append(dirs, c.containerRel(i))
	}
	return dirs
}

// startLive builds the cell under tmp. On error what it made is removed.
// farm is a prebuilt cellfarm ("": compile one under tmp).
func startLive(s fakehost.Spec, escaped float64, seed uint64, tmp, farm string) (c *liveCell, err error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("--live: run as root: the cell's processes go into cgroups of their own")
	}
	if err := roomFor(s.Processes()); err != nil {
		return nil, err
	}
	c = &liveCell{spec: s, prefix: fmt.Sprintf("cellbench-%d", os.Getpid()), dir: filepath.Join(tmp, "live")}
	defer func() {
		if err != nil {
			if cerr := c.stop(); cerr != nil {
				fmt.Fprintf(os.Stderr, "cellbench: cleanup: %v\n", cerr)
			}
			c = nil
		}
	}()
	if err := os.MkdirAll(c.runtimeRoot(), 0o700); err != nil {
		return c, err
	}
	if farm == "" {
		if farm, err = buildFarm(c.dir); err != nil {
			return c, err
		}
	}
	layout, err := cgroup.Discover("/")
	if err != nil {
		return c, err
	}
	moved := map[string]bool{}
	for _, h := range fakehost.Hierarchies {
		for _, k := range h.Keys {
			moved[k] = h.Moved
		}
	}
	for _, h := range layout.Hierarchies {
		lh := liveHier{Hierarchy: h, moved: moved[h.Key()]}
		c.hiers = append(c.hiers, lh) // before mkdirs: stop removes what it made
		if err := c.mkdirs(lh); err != nil {
			return c, err
		}
	}
	if err := c.raisePidMax(); err != nil {
		return c, err
	}
	start := time.Now()
	before, _ := memAvailable()
	if err := c.spawn(farm); err != nil {
		return c, err
	}
	if err := c.writeStates(); err != nil {
		return c, err
	}
	if err := c.escape(escaped, seed); err != nil {
		return c, err
	}
	after, _ := memAvailable()
	fmt.Printf("live cell: %d processes in %d containers and %d cgroups of %d hierarchies, %d escaped, up in %s, %.2f GB of MemAvailable\n",
		s.Processes(), s.Containers, (s.Containers+3)*len(c.hiers), len(c.hiers), len(c.escaped), time.Since(start).Round(time.Millisecond), float64(before-after)/1e9)
	return c, nil
}

// perProcess bounds what one of the farm's processes takes of the host's
// memory: kernel stack, task and page tables, and its few pages of the
// static program, with its cgroups' share (60,000 took 5.7-6.0 GB of
// MemAvailable here).
const perProcess = 100 << 10

// roomFor refuses a cell that would take more than half the memory free.
func roomFor(procs int) error {
	avail, err := memAvailable()
	if err != nil {
		return err
	}
	if need := int64(procs) * perProcess; need > avail/2 {
		return fmt.Errorf("--live: a cell of %d processes takes about %.1f GB, over half of MemAvailable (%.1f GB): use a smaller --scales",
			procs, float64(need)/1e9, float64(avail)/1e9)
	}
	return nil
}

// memAvailable is /proc/meminfo's MemAvailable in bytes.
func memAvailable() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("--live: no MemAvailable in /proc/meminfo")
}

// buildFarm compiles cellfarm.c with the host's C compiler into dir.
func buildFarm(dir string) (string, error) {
	src, bin := filepath.Join(dir, "cellfarm.c"), filepath.Join(dir, "cellfarm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(src, cellfarmC, 0o600); err != nil {
		return "", err
	}
	cc := "cc"
	if v := os.Getenv("CC"); v != "" {
		cc = v
	}
	// Static when libc's archive is installed: fewer pages per process.
	if exec.Command(cc, "-O2", "-static", "-o", bin, src).Run() == nil {
		return bin, nil
	}
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("--live: compile the cell's process (%s %s): %w\n%s(install a C compiler: apt-get install gcc)", cc, src, err, out)
	}
	return bin, nil
}

// mkdirs makes the cell's cgroups in one hierarchy. A v1 cpuset cgroup
// takes no task until it has cpus and mems: each gets its parent's.
func (c *liveCell) mkdirs(h liveHier) error {
	cpuset := map[string][]byte{} // the root's, which every cgroup of the cell gets
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if b, err := os.ReadFile(filepath.Join(h.Dir, f)); err == nil {
			cpuset[f] = b
		}
	}
	containers := map[string]bool{}
	for i := 0; i < c.spec.Containers; i++ {
		containers[c.containerRel(i)] = true
	}
	for _, d := range c.cgroupDirs() {
		p := filepath.Join(h.Dir, d)
		if err := os.Mkdir(p, 0o755); err != nil {
			return fmt.Errorf("--live: make cgroup: %w", err)
		}
		for f, b := range cpuset {
			if err := os.WriteFile(filepath.Join(p, f), b, 0); err != nil {
				return fmt.Errorf("--live: %s of %s: %w", f, p, err)
			}
		}
		if containers[d] {
			if err := writeLimits(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeLimits puts the limits every container's state records in force in
// its cgroup p, where p's hierarchy has their file: a clean cell is then
// clean for limits-intact too, as a fixture cell is (fakehost), and the
// bench times a healthy cell instead of one finding per process and limit.
// memsw (runc writes memory_swap there) after memory: the kernel refuses a
// memsw limit below the memory limit.
func writeLimits(p string) error {
	files := append(slices.Clone(fakehost.CellLimitFiles), fakehost.LimitFile{Name: "memory.memsw.limit_in_bytes", Value: fakehost.CellMemory})
	for _, f := range files {
		file := filepath.Join(p, f.Name)
		if _, err := os.Stat(file); err != nil {
			continue // another hierarchy's, or no swap accounting
		}
		if err := os.WriteFile(file, []byte(strconv.Itoa(f.Value)), 0); err != nil {
			return fmt.Errorf("--live: %s: %w", file, err)
		}
	}
	return nil
}

// raisePidMax makes room for the cell's pids: 4,194,304 (what systemd sets
// on 64-bit hosts) when kernel.pid_max is below twice what the cell and
// the tasks already running need. stop writes the old value back.
func (c *liveCell) raisePidMax() error {
	const file, room = "/proc/sys/kernel/pid_max", "4194304"
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	cur, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	tasks, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*")
	if cur >= 2*(c.spec.Processes()+len(tasks)) {
		return nil
	}
	if err := os.WriteFile(file, []byte(room), 0); err != nil {
		return fmt.Errorf("--live: raise kernel.pid_max from %d for %d processes: %w", cur, c.spec.Processes(), err)
	}
	c.pidMax = strings.TrimSpace(string(b))
	fmt.Printf("live cell: kernel.pid_max %s -> %s for the run (written back after)\n", c.pidMax, room)
	return nil
}

// spawn starts the farm and waits until every container has all its
// processes.
func (c *liveCell) spawn(farm string) error {
	s := c.spec
	args := []string{c.prefix, strconv.Itoa(s.Containers), strconv.Itoa(s.ProcsPerContainer), strconv.Itoa(s.HostProcs)}
	for _, h := range c.hiers {
		args = append(args, h.Dir)
	}
	c.farm = exec.Command(farm, args...)
	c.farm.Stderr = os.Stderr
	out, err := c.farm.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.farm.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "c" {
			pid, _ := strconv.Atoi(f[2])
			c.inits = append(c.inits, pid)
		}
		if len(f) == 1 && f[0] == "ready" {
			break
		}
	}
	if len(c.inits) != s.Containers {
		return fmt.Errorf("--live: the farm started %d of %d containers", len(c.inits), s.Containers)
	}
	// Each init forks the rest of its container after the farm went on.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		short := 0
		for i := range c.inits {
			if pids, err := c.listed(c.hiers[0], c.containerRel(i)); err != nil || len(pids) < s.ProcsPerContainer {
				short++
			}
		}
		if short == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("--live: %d containers still short of %d processes after 5 minutes", short, s.ProcsPerContainer)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *liveCell) listed(h liveHier, rel string) ([]int, error) {
	_, pids, err := cgroup.ReadProcs(filepath.Join(h.Dir, rel), nil, nil)
	return pids, err
}

// writeStates writes each container's state.json: fakehost's, with this
// host's cgroup paths.
func (c *liveCell) writeStates() error {
	r := procfs.New("/").NewReader()
	defer r.Close()
	for i, pid := range c.inits {
		st, err := r.Stat(pid)
		if err != nil {
			return err
		}
		id := fakehost.ContainerID(i)
		var state map[string]any
		if err := json.Unmarshal(fakehost.StateJSON(id, pid, st.StartTime), &state); err != nil {
			return err
		}
		paths := map[string]any{}
		for _, h := range c.hiers {
			for _, k := range h.keys() {
				paths[k] = filepath.Join(h.Dir, c.containerRel(i))
			}
		}
		state["cgroup_paths"] = paths
		state["config"].(map[string]any)["cgroups"].(map[string]any)["path"] = c.containerRel(i)
		b, err := json.Marshal(state)
		if err != nil {
			return err
		}
		dir := filepath.Join(c.runtimeRoot(), id)
		if err := os.Mkdir(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "state.json"), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// escape moves share of the containers' non-init processes, picked by seed,
// to <prefix>-escaped in every hierarchy systemd moves.
func (c *liveCell) escape(share float64, seed uint64) error {
	var all [][2]int // pid, container
	for i, init := range c.inits {
		pids, err := c.listed(c.hiers[0], c.containerRel(i))
		if err != nil {
			return err
		}
		slices.Sort(pids)
		for _, p := range pids {
			if p != init {
				all = append(all, [2]int{p, i})
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	c.escaped = map[int]int{}
	for _, pc := range all[:int(share*float64(len(all)))] {
		c.escaped[pc[0]] = pc[1]
		for _, h := range c.hiers {
			if !h.moved {
				continue
			}
			if err := c.move(h, c.escapedRel(), pc[0]); err != nil {
				return err
			}
			c.truth = append(c.truth, strings.Join([]string{strconv.Itoa(pc[0]), h.Name, c.containerRel(pc[1]), c.escapedRel()}, " "))
		}
	}
	slices.Sort(c.truth)
	return nil
}

func (c *liveCell) move(h liveHier, rel string, pid int) error {
	p := filepath.Join(h.Dir, rel, "cgroup.procs")
	if err := os.WriteFile(p, []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("--live: move %d to %s: %w", pid, p, err)
	}
	return nil
}

// heal moves the escaped processes back: the same cell, clean.
func (c *liveCell) heal() error {
	for pid, i := range c.escaped {
		for _, h := range c.hiers {
			if h.moved {
				if err := c.move(h, c.containerRel(i), pid); err != nil {
					return err
				}
			}
		}
	}
	c.truth = nil
	return nil
}

// stop ends the farm (which kills and reaps every process it started),
// removes the cgroups and the runtime root, and writes kernel.pid_max back.
func (c *liveCell) stop() error {
	c.stopped.Do(func() { c.stopErr = c.teardown() })
	return c.stopErr
}

func (c *liveCell) teardown() error {
	var errs []error
	if c.farm != nil && c.farm.Process != nil {
		// SIGTERM: the farm kills and reaps its cell. Should it not exit,
		// SIGKILL: each process dies with its parent.
		_ = c.farm.Process.Signal(syscall.SIGTERM)
		exited := make(chan error, 1)
		go func() { exited <- c.farm.Wait() }()
		var err error
		select {
		case err = <-exited:
		case <-time.After(time.Minute):
			_ = c.farm.Process.Kill()
			err = <-exited
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			errs = append(errs, err)
		}
	}
	// One deadline for every rmdir: a cgroup still busy after it (a process
	// that would not die) is reported, not waited for 25,000 times.
	deadline := time.Now().Add(30 * time.Second)
	dirs := c.cgroupDirs()
	for _, h := range c.hiers {
		for i := len(dirs) - 1; i >= 0; i-- { // children first
			if err := rmdirBy(filepath.Join(h.Dir, dirs[i]), deadline); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.pidMax != "" {
		if err := os.WriteFile("/proc/sys/kernel/pid_max", []byte(c.pidMax), 0); err != nil {
			errs = append(errs, fmt.Errorf("write kernel.pid_max %s back: %w", c.pidMax, err))
		}
	}
	if err := os.RemoveAll(c.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// rmdirBy removes a cgroup, retrying until deadline: one whose last
// process is still exiting is busy for a moment.
func rmdirBy(p string, deadline time.Time) error {
	for {
		err := os.Remove(p)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("remove cgroup %s: %w", p, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopOnSignal stops the cell on Ctrl-C or SIGTERM and exits; the function
// it returns stops the cell and the watch. The farm would stop by itself
// (it gets the terminal's signal too, or sees cellbench die), but the
// cgroups and kernel.pid_max are cellbench's to undo.
func (c *liveCell) stopOnSignal() (stop func() error) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sig:
			if err := c.stop(); err != nil {
				fmt.Fprintf(os.Stderr, "cellbench: cleanup: %v\n", err)
			}
			fmt.Fprintf(os.Stderr, "cellbench: %v: stopped the live cell\n", s)
			os.Exit(130)
		case <-done:
		}
	}()
	return func() error {
		close(done)
		signal.Stop(sig)
		return c.stop()
	}
}

// measureLive is measure on a live cell: the escaped cell, then healed.
// The shell baseline reads a fixture's files and is not run.
func (f *runFlags) measureLive(k int, tmp string) (r *result, err error) {
	s := fakehost.Cell(k)
	r = &result{spec: s, live: true, baselineSkips: "not run on a live cell"}
	fmt.Printf("\n== %dx live: %d containers x %d + %d host = %d processes\n", k, s.Containers, s.ProcsPerContainer, s.HostProcs, s.Processes())
	c, err := startLive(s, f.escaped, f.seed, tmp, f.farm)
	if err != nil {
		return nil, err
	}
	stop := c.stopOnSignal()
	defer func() {
		if cerr := stop(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()
	target := []string{"--runtime-root", c.runtimeRoot()}
	runs, err := f.cellguards(target, f.runs, len(c.truth) > 0)
	if err != nil {
		return r, err
	}
	for _, b := range runs {
		if !slices.Equal(b.escapes, c.truth) {
			return r, fmt.Errorf("%dx live: %s reported %d escapes, the cell has %d:\n%s", k, b.bin, len(b.escapes), len(c.truth), diff(b.escapes, c.truth))
		}
	}
	r.escapedPIDs = len(c.escaped)
	r.record(runs, true)
	r.found = fmt.Sprintf("%dx live: planted %d escapes (%d pids); every binary found the same %d", k, len(c.truth), len(c.escaped), len(c.truth))
	fmt.Println(r.found)
	if err := f.measureHealed(r, target, c.heal); err != nil {
		return r, err
	}
	fmt.Printf("cellguard clean median %s ms (CPU %s), escaped median %s ms (CPU %s)\n",
		ms(median(r.clean.wall)), ms(median(r.clean.cpu)), ms(median(r.dirty.wall)), ms(median(r.dirty.cpu)))
	return r, nil
}

// live brings a live cell up, runs a command beside it with
// CELLBENCH_RUNTIME_ROOT naming its runtime root (for cellguard's
// --runtime-root), and takes the cell down: to profile what run --live
// times.
func live(args []string) (err error) {
	fs := flag.NewFlagSet("live", flag.ExitOnError)
	scale := fs.Int("scale", 1, "cell size: multiples of 250 containers x 20 processes + 1,000 host processes")
	escaped := fs.Float64("escaped", 0.01, "share of container processes moved out of their cgroups")
	seed := fs.Uint64("seed", 1, "picks the escaped processes")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		return errors.New("live: name a command to run beside the cell, after --")
	}
	tmp, err := os.MkdirTemp("", "cellbench-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c, err := startLive(fakehost.Cell(*scale), *escaped, *seed, tmp, "")
	if err != nil {
		return err
	}
	stop := c.stopOnSignal()
	defer func() {
		if cerr := stop(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
		}
	}()
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), "CELLBENCH_RUNTIME_ROOT="+c.runtimeRoot())
	// A SIGTERM to cellbench alone exits it (stopOnSignal): the command
	// goes with it rather than outlive the cell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	return cmd.Run()
}
