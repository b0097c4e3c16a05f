package qemuvm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm/wire"
)

// Image is a built image directory (src/tests/qemu/image.sh).
type Image struct {
	Dir     string
	Disk    string // raw ext4 root filesystem, opened read-only
	Kernel  string // vmlinuz
	Cmdline string // the stemcell builder's kernel command line (image.sh)
	Env     map[string]string
}

// LoadImage reads an image directory image.sh built.
func LoadImage(dir string) (Image, error) {
	img := Image{Dir: dir, Disk: filepath.Join(dir, "disk.img"), Kernel: filepath.Join(dir, "vmlinuz")}
	env, err := os.ReadFile(filepath.Join(dir, "image.env"))
	if err != nil {
		return Image{}, fmt.Errorf("load image %s: %w", dir, err)
	}
	img.Env = keyValues(env)
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return Image{}, fmt.Errorf("load image %s: %w", dir, err)
	}
	img.Cmdline = strings.TrimSpace(string(cmdline))
	for _, p := range []string{img.Disk, img.Kernel} {
		if _, err := os.Stat(p); err != nil {
			return Image{}, fmt.Errorf("load image %s: %w", dir, err)
		}
	}
	return img, nil
}

// TBSizeEnv overrides Options.TBSizeMB's default (to measure another size).
const TBSizeEnv = "CELLGUARD_QEMU_TB_SIZE_MB"

// Options shape a VM. Zero values take the defaults.
type Options struct {
	MemoryMB int // -m (default 2048)
	CPUs     int // -smp (default 2)
	// TBSizeMB is TCG's translation buffer (default 256, or TBSizeEnv).
	// QEMU 7.2's default is 1 GiB, most of a TCG guest's RSS (README.md).
	TBSizeMB int
	// Accel: "" (KVM where it proved to work in this process, else TCG),
	// "kvm" or "tcg".
	Accel string
	// BootTimeout bounds the boot (default BootTimeout()).
	BootTimeout time.Duration
	Log         io.Writer // progress lines (default: discarded)
}

func (o Options) withDefaults() Options {
	if o.MemoryMB == 0 {
		o.MemoryMB = 2048
	}
	if o.CPUs == 0 {
		o.CPUs = 2
	}
	if o.TBSizeMB == 0 {
		o.TBSizeMB = 256
		if n, err := strconv.Atoi(os.Getenv(TBSizeEnv)); err == nil && n > 0 {
			o.TBSizeMB = n
		}
	}
	if o.BootTimeout == 0 {
		o.BootTimeout = BootTimeout()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// BootTimeout is a boot's bound on this machine now: 4 minutes plus 15 s per
// unit of the 1-minute load average, at most 20 minutes. A TCG boot took
// 37-42 s on a quiet 2-core host and 88 s at load 35 (README.md).
func BootTimeout() time.Duration {
	d := 4 * time.Minute
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			if l, err := strconv.ParseFloat(f[0], 64); err == nil {
				d += time.Duration(l * float64(15*time.Second))
			}
		}
	}
	return min(d, 20*time.Minute)
}

// VM is one running QEMU guest.
type VM struct {
	Accel    string        // "kvm" or "tcg"
	Nice     int           // qemu's nice value (TCG: TCGNice for one guest at a time, else 0)
	PID      int           // the qemu process
	BootTime time.Duration // from qemu's start to the agent's hello and is-system-running
	Hello    string        // the agent's greeting (pid, kernel, boot id)
	State    string        // systemctl is-system-running after boot: running or degraded
	Image    Image

	dir     string
	cmd     *exec.Cmd
	exited  chan struct{} // closed when qemu has been reaped
	waitErr error

	mu     sync.Mutex // one request at a time on the port
	conn   net.Conn
	rd     *bufio.Reader
	nextID uint64

	closeOnce sync.Once
	closeErr  error
	forget    func() // unregisters Close from the signal's teardown; under mu
}

// dirPrefix names each VM's directory in os.TempDir(); the pid lets a later
// Boot remove the directories of test processes that died without Close.
const dirPrefix = "cellguard-qemuvm-"

// Boot starts a VM from img and waits until its agent answers and systemd
// reports the system running (or degraded). With Options.Accel "" it boots
// under KVM when that proved to work, else TCG (see kvmUsable).
func Boot(ctx context.Context, img Image, opts Options) (*VM, error) {
	opts = opts.withDefaults()
	removeStaleDirs()
	if opts.Accel != "" {
		return bootOnce(ctx, img, opts, opts.Accel, opts.BootTimeout)
	}
	v, why := bootKVM(ctx, img, opts)
	if v != nil {
		return v, nil
	}
	fmt.Fprintf(opts.Log, "qemuvm: TCG, not KVM: %s\n", why)
	return bootOnce(ctx, img, opts, "tcg", opts.BootTimeout)
}

func bootOnce(ctx context.Context, img Image, opts Options, accel string, timeout time.Duration) (*VM, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, err := start(img, opts, accel)
	if err != nil {
		return nil, err
	}
	register(v)
	if accel == "kvm" {
		go v.cancelOnKVMError(ctx, cancel)
	}
	model := "-cpu host"
	if accel == "tcg" {
		model = fmt.Sprintf("-cpu %s, tb-size %d MiB, nice %d", tcgCPU(), opts.TBSizeMB, v.Nice)
	}
	fmt.Fprintf(opts.Log, "qemuvm: qemu pid %d (%s, -m %d, -smp %d, %s), boot timeout %v\n",
		v.PID, accel, opts.MemoryMB, opts.CPUs, model, timeout.Round(time.Second))
	if err := v.waitBoot(ctx); err != nil {
		tail, qerr := v.ConsoleTail(40), v.stderrText()
		if oops := v.ConsoleOops(120); oops != "" {
			tail = "the first oops or panic report:\n" + oops + "\n...\n" + tail
		}
		v.Close()
		if qerr != "" {
			err = fmt.Errorf("%w (qemu: %s)", err, firstLine(qerr))
		}
		return nil, fmt.Errorf("boot %s VM: %w\nlast console lines:\n%s", accel, err, tail)
	}
	return v, nil
}

// qemuArgs is the command line: no display, no NIC, the kernel booted
// directly (Ubuntu's has virtio-blk and ext4 built in), the image under
// snapshot=on, the agent's port on a unix socket, the console in a file.
//
// TCG runs every vCPU on one host thread (thread=single): with one thread
// per vCPU (QEMU 7.2's thread=multi) the 6.8 guest died of its own static
// key patching, an int3 or a jump into the middle of an instruction in the
// scheduler (update_curr, pick_next_task_fair), whenever a cgroup's cpu.max
// came or went on one vCPU while the other ran; single-threaded it did not
// (TestTCGSurvivesStaticKeyPatching). no_timer_check: a loaded TCG host
// once missed the kernel's boot-time timer IRQ probe and it panicked
// ("IO-APIC + timer doesn't work"). panic=1 with -no-reboot: a guest that
// panics ends qemu, so a test fails at once with the console, not at its
// exec's timeout.
func qemuArgs(img Image, opts Options, accel, dir string) []string {
	acc := fmt.Sprintf("tcg,thread=single,tb-size=%d", opts.TBSizeMB)
	cpu := tcgCPU()
	if accel == "kvm" {
		acc, cpu = "kvm", "host"
	}
	return []string{
		"-name", "cellguard-qemuvm", "-nodefaults", "-no-user-config", "-display", "none",
		"-machine", "q35", "-accel", acc, "-cpu", cpu,
		"-m", strconv.Itoa(opts.MemoryMB), "-smp", strconv.Itoa(opts.CPUs),
		"-kernel", img.Kernel, "-append", img.Cmdline + " no_timer_check panic=1",
		"-drive", "file=" + img.Disk + ",format=raw,if=virtio,snapshot=on",
		"-device", "virtio-rng-pci",
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=agent,path=" + filepath.Join(dir, "agent.sock") + ",server=on,wait=off",
		"-device", "virtserialport,chardev=agent,name=" + wire.PortName,
		"-serial", "file:" + filepath.Join(dir, "console.log"),
		"-nic", "none", "-no-reboot", "-monitor", "none",
	}
}

// TCGCPU is a TCG guest's CPU model: QEMU's max without CMPXCHG16B. Every
// guest kernel crash on record here under QEMU 7.2's TCG was in SLUB's
// allocation fast path, whose per-cpu freelist update is `cmpxchg16b
// %gs:(%rsi)` when the CPU has CX16: CI's TestNobleFalseRecord
// (2026-12-07) took a double fault on the instruction after it with EFLAGS
// c32f9242, the low half of RAX, not flags; fleet run 2 a double fault in
// kmalloc_node_trace; TestNobleSeed001 a panic whose registers hold
// GFP_KERNEL. Without CX16 the 6.8 kernel takes its own path
// (this_cpu_cmpxchg16b_emu: interrupts off, plain moves), and no userland
// the tests run needs it (x86-64 v1: glibc, Go, systemd).
const TCGCPU = "max,cx16=off"

// TCGCPUEnv overrides TCGCPU (to compare another model).
const TCGCPUEnv = "CELLGUARD_QEMU_TCG_CPU"

func tcgCPU() string {
	if c := os.Getenv(TCGCPUEnv); c != "" {
		return c
	}
	return TCGCPU
}

// TCGNice is a TCG guest's nice value. Such a guest is one host thread
// (thread=single) emulating a whole machine, and its kernel's, systemd's
// and agents' clocks run on while that thread waits for a core: beside
// make test's other packages (directors, nspawn boxes; load 10 on 2 cores)
// one noble boot took 370 s instead of 40-60 and its agent missed the test's
// bound (CI, 2026-12-07). At nice -10 (CFS weight 9548 against 1024 for a
// process or a box's cgroup at nice 0) the guest keeps about one core of
// two and the other tests share the other; they wait for a core, the
// guest's clocks do not. Only one guest of a process at a time runs at it
// (priority); the others run at nice 0.
const TCGNice = -10

// priority is held by the one TCG guest of this process running at
// TCGNice. src/tests/qemu boots its guests in parallel, and two at -10 take
// both cores of a 2-core host from everything else: beside two, make test's
// integration package took 363 s instead of 192 (CI-B, 2026-12-07). A
// second guest at nice 0 shares the other core with the other tests, and
// when nothing else runs it has a core anyway.
var priority = make(chan struct{}, 1)

// takePriority takes the slot if it is free.
func takePriority() bool {
	select {
	case priority <- struct{}{}:
		return true
	default:
		return false
	}
}

func releasePriority() { <-priority }

func start(img Image, opts Options, accel string) (*VM, error) {
	bin, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", dirPrefix, os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	args := qemuArgs(img, opts, accel, dir)
	nice, prio := 0, false
	if accel == "tcg" {
		if prio = takePriority(); prio {
			nice = TCGNice
		}
		// nice execs qemu: the pid stays qemu's.
		args, bin = append([]string{"-n", strconv.Itoa(nice), bin}, args...), "nice"
	}
	cmd := exec.Command(bin, args...)
	// snapshot=on's overlay goes to TMPDIR: the VM's directory, removed by Close.
	cmd.Env = append(os.Environ(), "TMPDIR="+dir)
	stderr, err := os.Create(filepath.Join(dir, "qemu.stderr"))
	if err != nil {
		if prio {
			releasePriority()
		}
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	cmd.Stdout, cmd.Stderr = stderr, stderr
	// Its own process group: a terminal's Ctrl-C reaches the test, which
	// closes the VM, not qemu directly. Pdeathsig: qemu dies with the
	// thread that started it, which is locked and lives until qemu is reaped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	v := &VM{Accel: accel, Nice: nice, Image: img, dir: dir, cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine, after qemu
		if prio {
			defer releasePriority() // when qemu has been reaped, or never started
		}
		if err := cmd.Start(); err != nil {
			started <- err
			close(v.exited)
			return
		}
		started <- nil
		v.waitErr = cmd.Wait()
		stderr.Close()
		close(v.exited)
	}()
	if err := <-started; err != nil {
		stderr.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start qemu: %w", err)
	}
	v.PID = cmd.Process.Pid
	return v, nil
}

// waitBoot connects to the agent's socket, waits for its hello, then for
// systemd to finish booting.
func (v *VM) waitBoot(ctx context.Context) error {
	t0 := time.Now()
	sock := filepath.Join(v.dir, "agent.sock")
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			v.mu.Lock()
			v.conn, v.rd = c, bufio.NewReaderSize(c, 1<<20)
			v.mu.Unlock()
			break
		}
		select {
		case <-v.exited:
			return fmt.Errorf("qemu exited (%v): %s", v.waitErr, v.stderrText())
		case <-ctx.Done():
			return fmt.Errorf("connect to the agent's socket: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	// The hello waits in the socket until the guest opens its port. Ask again
	// now and then in case an agent restart lost one; any answer will do.
	for {
		hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := v.roundTrip(hctx, wire.Request{Op: wire.OpHello})
		cancel()
		if err == nil {
			v.Hello = resp.Hello
			break
		}
		select {
		case <-v.exited:
			return fmt.Errorf("qemu exited (%v): %s", v.waitErr, v.stderrText())
		case <-ctx.Done():
			return fmt.Errorf("wait for the agent's hello: %w", ctx.Err())
		default:
		}
	}
	res, err := v.Exec(ctx, "systemctl", "is-system-running", "--wait")
	if err != nil {
		return fmt.Errorf("wait for systemd: %w", err)
	}
	state := strings.TrimSpace(string(res.Stdout))
	if state != "running" && state != "degraded" {
		failed, _ := v.Exec(ctx, "systemctl", "--failed", "--no-legend")
		return fmt.Errorf("systemd is %q after boot; failed units: %s", state, failed.Stdout)
	}
	v.State, v.BootTime = state, time.Since(t0)
	return nil
}

// Result is a command's outcome in the guest.
type Result struct {
	Stdout, Stderr []byte
	Exit           int // -1: killed or timed out
}

// Exec runs args in the guest (as root, PATH set, in /), bounded by ctx
// (its deadline also bounds the command in the guest). A non-zero exit is
// not an error: see Result.Exit.
func (v *VM) Exec(ctx context.Context, args ...string) (Result, error) {
	req := wire.Request{Op: wire.OpExec, Args: args}
	if d, ok := ctx.Deadline(); ok {
		req.TimeoutMS = max(time.Until(d).Milliseconds()-500, 1)
	}
	resp, err := v.roundTrip(ctx, req)
	res := Result{Stdout: resp.Stdout, Stderr: resp.Stderr, Exit: resp.Exit}
	if err != nil {
		return res, fmt.Errorf("exec %s in the VM: %w", strings.Join(args, " "), err)
	}
	if resp.Error != "" {
		return res, fmt.Errorf("exec %s in the VM: %s", strings.Join(args, " "), resp.Error)
	}
	return res, nil
}

// Put writes data to path in the guest with mode, atomically.
func (v *VM) Put(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	resp, err := v.roundTrip(ctx, wire.Request{Op: wire.OpPut, Path: path, Data: data, Mode: uint32(mode.Perm())})
	if err == nil && resp.Error != "" {
		err = errors.New(resp.Error)
	}
	if err != nil {
		return fmt.Errorf("put %s in the VM: %w", path, err)
	}
	return nil
}

// CopyIn copies the host file src to dst in the guest with mode.
func (v *VM) CopyIn(ctx context.Context, src, dst string, mode os.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("copy %s into the VM: %w", src, err)
	}
	return v.Put(ctx, dst, data, mode)
}

func (v *VM) roundTrip(ctx context.Context, req wire.Request) (wire.Response, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.conn == nil {
		return wire.Response{}, errors.New("VM closed")
	}
	v.nextID++
	req.ID = v.nextID
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Time{}
	}
	// The socket's deadline is ctx's; a cancel without a deadline interrupts it too.
	_ = v.conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = v.conn.SetDeadline(time.Now()) })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return wire.Response{}, err
	}
	if _, err := v.conn.Write(append(b, '\n')); err != nil {
		return wire.Response{}, fmt.Errorf("send request: %w", err)
	}
	for {
		line, err := v.rd.ReadBytes('\n')
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return wire.Response{}, fmt.Errorf("read response: %w", err)
		}
		var resp wire.Response
		if err := json.Unmarshal(line, &resp); err != nil {
			return wire.Response{}, fmt.Errorf("read response: %w", err)
		}
		if resp.ID == req.ID || (req.Op == wire.OpHello && resp.Hello != "") {
			return resp, nil
		}
		// an answer to an earlier request that timed out on this side
	}
}

// RSS is qemu's resident set size now and its peak (VmRSS, VmHWM), in bytes.
func (v *VM) RSS() (now, peak int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", v.PID))
	if err != nil {
		return 0, 0, fmt.Errorf("read qemu's rss: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || (f[0] != "VmRSS:" && f[0] != "VmHWM:") {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("read qemu's rss: %w", err)
		}
		if f[0] == "VmRSS:" {
			now = kb * 1024
		} else {
			peak = kb * 1024
		}
	}
	return now, peak, nil
}

// CPUTime is the CPU time qemu has used so far (user and system, all threads).
func (v *VM) CPUTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", v.PID))
	if err != nil {
		return 0, fmt.Errorf("read qemu's cpu time: %w", err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, errors.New("read qemu's cpu time: short stat")
	}
	var ticks int64
	for _, x := range f[11:13] { // utime, stime
		n, err := strconv.ParseInt(x, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read qemu's cpu time: %w", err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// ConsoleTail is the last n lines of the guest's serial console.
func (v *VM) ConsoleTail(n int) string {
	b, _ := os.ReadFile(filepath.Join(v.dir, "console.log"))
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// ConsoleOops is the guest kernel's first oops or panic report on the
// serial console, from its first line (BUG:, Oops:, a fault, a panic) for at
// most n lines, or "" when there is none. A panic's last 30 lines are its
// register dump: what oopsed, and where, is above them.
func (v *VM) ConsoleOops(n int) string {
	b, _ := os.ReadFile(filepath.Join(v.dir, "console.log"))
	return OopsReport(string(b), n)
}

// oopsMarkers open a kernel's oops, BUG or panic report (lib/bug.c,
// arch/x86/kernel/dumpstack.c, traps.c, kernel/panic.c).
// A WARNING is not one: a harmless one early in the boot would hide the crash.
var oopsMarkers = []string{"BUG:", "Oops:", "kernel BUG at", "general protection fault", "invalid opcode:",
	"stack segment:", "double fault:", "Kernel panic - not syncing"}

// OopsReport is ConsoleOops of a console's text.
func OopsReport(console string, n int) string {
	lines := strings.Split(strings.TrimRight(console, "\n"), "\n")
	for i, l := range lines {
		for _, m := range oopsMarkers {
			if strings.Contains(l, m) {
				return strings.Join(lines[i:min(i+n, len(lines))], "\n")
			}
		}
	}
	return ""
}

func (v *VM) stderrText() string {
	b, _ := os.ReadFile(filepath.Join(v.dir, "qemu.stderr"))
	return strings.TrimSpace(string(b))
}

// Close kills the qemu process this VM started (by its pid; the guest's
// disk is a throwaway overlay, so nothing needs a clean shutdown), reaps it
// and removes the VM's directory. Safe to call more than once.
func (v *VM) Close() error {
	v.closeOnce.Do(func() {
		// qemu first: its death ends a request in flight (EOF on the socket),
		// which releases the port's lock.
		select {
		case <-v.exited:
		default:
			_ = v.cmd.Process.Signal(syscall.SIGKILL)
		}
		select {
		case <-v.exited:
		case <-time.After(time.Minute):
			v.closeErr = fmt.Errorf("close VM: qemu pid %d not reaped a minute after SIGKILL", v.PID)
		}
		v.mu.Lock()
		if v.conn != nil {
			v.conn.Close()
			v.conn = nil
		}
		forget := v.forget
		v.mu.Unlock()
		if err := os.RemoveAll(v.dir); err != nil && v.closeErr == nil {
			v.closeErr = fmt.Errorf("close VM: %w", err)
		}
		if forget != nil {
			forget()
		}
	})
	return v.closeErr
}

func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*-*"))
	for _, d := range dirs {
		pidStr, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), dirPrefix), "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

func keyValues(b []byte) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok {
			m[k] = v
		}
	}
	return m
}
