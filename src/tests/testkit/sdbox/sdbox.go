package sdbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// ExecPath is PATH for commands run by Exec.
const ExecPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Box is a running container whose PID 1 is systemd.
type Box struct {
	// Name is the unique box name: the name given to Start plus "-<pid>"
	// (and "-2", "-3", ... while a box of that name runs in this process).
	Name string
	// Mode is the cgroup layout inside the box: cgroup.Hybrid (this
	// host's: v1 controllers writable inside, name=systemd, cgroup2 on
	// /sys/fs/cgroup/unified; the default), cgroup.Legacy or cgroup.Unified.
	Mode cgroup.Mode
	// InitPID is the host PID of the box's systemd (PID 1 inside).
	InitPID int
	// NspawnPID is the host PID of the systemd-nspawn supervising the box.
	NspawnPID int
	// Root is /proc/<InitPID>/root: the box's filesystem seen from the host.
	Root string
	// SystemBusAddress reaches the box's dbus-daemon from any host process,
	// e.g. for godbus.Dial (then Auth EXTERNAL and Hello).
	SystemBusAddress string
	// HostCgroup is the box's cgroup in every host hierarchy,
	// e.g. /sys/fs/cgroup/memory/<HostCgroup>.
	HostCgroup string
	// Hierarchies are the host's cgroup mount points (/sys/fs/cgroup/memory, ...).
	Hierarchies []string
	// BootTime is how long Start took (rootfs cached).
	BootTime time.Duration
	// State is sdbox.sh's directory for this box (env, console.log, ...).
	State string

	script    string
	env       []string
	rootFD    *os.Root
	joins     []string          // cgroup.procs files Exec joins: the box's root cgroups
	prefixes  map[string]string // hierarchy -> host path of the box's cgroup namespace root
	watchW    *os.File          // closing it (or dying) makes the watcher stop the box
	watchDone chan struct{}     // closed when the watcher has exited
	stopOnce  sync.Once
	stopErr   error
	reserved  bool // Name is in names.used until Stop
}

// names makes box names unique within this process, so tests (also parallel
// ones) may Start the same name more than once.
var names struct {
	sync.Mutex
	used map[string]bool
}

func reserveName(base string) string {
	names.Lock()
	defer names.Unlock()
	if names.used == nil {
		names.used = map[string]bool{}
	}
	n := base
	for i := 2; names.used[n]; i++ {
		n = fmt.Sprintf("%s-%d", base, i)
	}
	names.used[n] = true
	return n
}

func releaseName(n string) {
	names.Lock()
	defer names.Unlock()
	delete(names.used, n)
}

type config struct {
	mode        cgroup.Mode
	bootTimeout time.Duration
	nspawnArgs  []string
	packages    []string
	suite       string
	log         io.Writer
	exactName   bool
	v1Extra     []string
}

// Option changes how Start boots the box.
type Option func(*config)

// WithCgroupMode selects the cgroup layout inside the box (default Hybrid).
func WithCgroupMode(m cgroup.Mode) Option { return func(c *config) { c.mode = m } }

// WithBootTimeout bounds the wait for systemd to reach running/degraded, in
// whole seconds (default 120s).
func WithBootTimeout(d time.Duration) Option { return func(c *config) { c.bootTimeout = d } }

// WithNspawnArgs adds systemd-nspawn arguments, e.g. "--bind-ro=/src:/src".
func WithNspawnArgs(args ...string) Option {
	return func(c *config) { c.nspawnArgs = append(c.nspawnArgs, args...) }
}

// WithExtraPackages adds Debian packages to the rootfs; each distinct set gets
// its own cached rootfs, built once (about a minute).
func WithExtraPackages(pkgs ...string) Option {
	return func(c *config) { c.packages = append(c.packages, pkgs...) }
}

// WithSuite boots another debootstrap suite than bookworm, e.g. Ubuntu's
// "xenial" (systemd 229) or "jammy" (249); each suite has its own cached
// rootfs, built once (one to six minutes; sdbox.sh says how it is verified).
func WithSuite(suite string) Option { return func(c *config) { c.suite = suite } }

// WithLog copies sdbox.sh's progress messages to w (e.g. os.Stderr).
func WithLog(w io.Writer) Option { return func(c *config) { c.log = w } }

// WithV1Hierarchies makes sdbox.sh bind each v1 controller set (e.g.
// "net_cls,net_prio") to a hierarchy, making it when there is none, and
// mount it in the box from its boot on (hybrid and legacy modes): the
// box's share of a hierarchy that a test beside it may make, so that it
// never lists one in /proc/PID/cgroup that it has mounted nowhere. This
// changes the kernel while the box runs, as a stemcell box does (sdbox.sh
// SDBOX_V1_EXTRA, which this sets instead of the rootfs's list).
func WithV1Hierarchies(sets ...string) Option {
	return func(c *config) { c.v1Extra = append(c.v1Extra, sets...) }
}

// WithExactName uses name as is instead of appending "-<pid>"; for callers
// that make names unique themselves.
func WithExactName() Option { return func(c *config) { c.exactName = true } }

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,29}$`)

// ScriptPath returns the path of src/tests/harness/sdbox.sh.
func ScriptPath() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", fmt.Errorf("locate sdbox.sh: %w", err)
	}
	p := filepath.Join(root, "src", "tests", "harness", "sdbox.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("locate sdbox.sh: %w", err)
	}
	return p, nil
}

// ModuleRoot returns the repository root (where go.mod is): relative to this
// source file, so tests work from any directory, or, when built with
// -trimpath, the nearest go.mod above the working directory (go test runs in
// the package's directory).
func ModuleRoot() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		return filepath.Join(filepath.Dir(file), "..", "..", "..", ".."), nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			strings.HasPrefix(string(data), "module github.com/cloudfoundry/cellguard\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no cellguard go.mod above the working directory")
		}
		dir = parent
	}
}

// Start boots a box named name-<pid> (name-<pid>-2, ... while that one runs)
// and waits until its systemd is running. name is [a-z0-9-], at most 30
// characters. Stop it (t.Cleanup(func() { box.Stop() })) or use Main.
func Start(ctx context.Context, name string, opts ...Option) (*Box, error) {
	cfg := config{mode: cgroup.Hybrid, bootTimeout: 120 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("start box %q: name must match %s", name, nameRE)
	}
	script, err := ScriptPath()
	if err != nil {
		return nil, err
	}
	if !cfg.exactName {
		name = reserveName(fmt.Sprintf("%s-%d", name, os.Getpid()))
	}
	b := &Box{Name: name, Mode: cfg.mode, script: script, reserved: !cfg.exactName}
	b.env = append(os.Environ(),
		"SDBOX_NAME="+name,
		"SDBOX_CGROUP_MODE="+cfg.mode.String(),
		"SDBOX_BOOT_TIMEOUT="+strconv.Itoa(int(cfg.bootTimeout.Seconds())),
		"SDBOX_NSPAWN_ARGS="+strings.Join(cfg.nspawnArgs, " "),
		"SDBOX_EXTRA_PACKAGES="+strings.Join(cfg.packages, " "),
		"SDBOX_OWNER_PID="+strconv.Itoa(os.Getpid()),
	)
	if cfg.suite != "" {
		b.env = append(b.env, "SDBOX_SUITE="+cfg.suite)
	}
	if len(cfg.v1Extra) > 0 {
		b.env = append(b.env, "SDBOX_V1_EXTRA="+strings.Join(cfg.v1Extra, " "))
	}

	t0 := time.Now()
	if err := b.startWatcher(); err != nil {
		if b.reserved {
			releaseName(name)
		}
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script, "start")
	cmd.Env = b.env
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if cfg.log != nil {
		cmd.Stderr = io.MultiWriter(&stderr, cfg.log)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		stopErr := b.Stop()
		return nil, fmt.Errorf("start box %s: %w\n%s(cleanup: %v)", name, err, stderr.String(), stopErr)
	}
	if err := b.load(stdout.Bytes()); err != nil {
		stopErr := b.Stop()
		return nil, fmt.Errorf("start box %s: %w (stdout %q; cleanup: %v)", name, err, stdout.String(), stopErr)
	}
	if err := b.learnCgroupRoots(ctx); err != nil {
		stopErr := b.Stop()
		return nil, fmt.Errorf("start box %s: %w (cleanup: %v)", name, err, stopErr)
	}
	b.BootTime = time.Since(t0)
	return b, nil
}

// startWatcher runs "sdbox.sh watch" in its own session: it blocks reading a
// pipe whose write end only this process holds, so it sees EOF when we close
// it in Stop or when we die in any way, and then stops the box.
func (b *Box) startWatcher() error {
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("start box %s watcher: %w", b.Name, err)
	}
	defer r.Close()
	logf, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		w.Close()
		return fmt.Errorf("start box %s watcher: %w", b.Name, err)
	}
	defer logf.Close()
	// Not tied to the caller's stdout/stderr: go test waits for those to close.
	cmd := exec.Command("bash", b.script, "watch")
	cmd.Env = b.env
	cmd.Stdin = nil
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.ExtraFiles = []*os.File{r} // fd 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("start box %s watcher: %w", b.Name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the watcher reports nothing
	b.watchW, b.watchDone = w, done
	return nil
}

// keyValues reads the KEY=VALUE lines sdbox.sh prints.
func keyValues(out []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[k] = strings.Trim(v, "'") // eval-able shell quoting
		}
	}
	return kv
}

func (b *Box) load(out []byte) error {
	kv := keyValues(out)
	var err error
	if b.InitPID, err = strconv.Atoi(kv["SDBOX_INIT_PID"]); err != nil {
		return fmt.Errorf("parse SDBOX_INIT_PID: %w", err)
	}
	if b.NspawnPID, err = strconv.Atoi(kv["SDBOX_NSPAWN_PID"]); err != nil {
		return fmt.Errorf("parse SDBOX_NSPAWN_PID: %w", err)
	}
	b.Root = kv["SDBOX_ROOT"]
	b.SystemBusAddress = kv["SDBOX_SYSTEM_BUS_ADDRESS"]
	b.HostCgroup = kv["SDBOX_HOST_CGROUP"]
	b.Hierarchies = strings.Fields(kv["SDBOX_HIERARCHIES"])
	b.State = kv["SDBOX_STATE"]
	if b.Root == "" || b.State == "" || b.SystemBusAddress == "" || b.HostCgroup == "" || len(b.Hierarchies) == 0 {
		return errors.New("sdbox.sh start printed incomplete KEY=VALUE lines")
	}
	if b.rootFD, err = os.OpenRoot(b.Root); err != nil {
		return fmt.Errorf("open box root: %w", err)
	}
	// Exec joins the box's root cgroup in every hierarchy; nspawn puts the box
	// one level down (payload/) in the hierarchies it manages itself.
	for _, h := range b.Hierarchies {
		d := filepath.Join(h, b.HostCgroup)
		if fi, err := os.Stat(filepath.Join(d, "payload")); err == nil && fi.IsDir() {
			d = filepath.Join(d, "payload")
		}
		b.joins = append(b.joins, filepath.Join(d, "cgroup.procs"))
	}
	return nil
}

// learnCgroupRoots compares PID 1's cgroups seen from the host with those seen
// inside, which gives the host path of the box's cgroup namespace root per
// hierarchy; ReadCgroup strips it.
func (b *Box) learnCgroupRoots(ctx context.Context) error {
	host, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", b.InitPID))
	if err != nil {
		return fmt.Errorf("read init cgroups: %w", err)
	}
	inside, err := b.Exec(ctx, "cat", "/proc/1/cgroup")
	if err != nil {
		return err
	}
	hm, im := parseCgroup(host), parseCgroup(inside)
	b.prefixes = map[string]string{}
	for k, hp := range hm {
		ip, ok := im[k]
		if !ok {
			continue // a hierarchy not mounted inside (e.g. v1 controllers in Unified)
		}
		pre := strings.TrimSuffix(hp, strings.TrimSuffix(ip, "/"))
		if ip == "/" {
			pre = hp
		}
		if !strings.HasSuffix(hp, strings.TrimSuffix(ip, "/")) {
			return fmt.Errorf("init cgroup %q: host path %q does not end in box path %q", k, hp, ip)
		}
		b.prefixes[k] = strings.TrimSuffix(pre, "/")
	}
	return nil
}

// parseCgroup maps the hierarchy field of /proc/<pid>/cgroup ("memory",
// "name=systemd", "" for cgroup v2) to the path.
func parseCgroup(data []byte) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			m[parts[1]] = parts[2]
		}
	}
	return m
}

// Stop halts the box and removes its cgroups, mounts and state. Safe to call
// more than once and on a nil Box.
func (b *Box) Stop() error {
	if b == nil {
		return nil
	}
	b.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", b.script, "stop")
		cmd.Env = b.env
		cmd.WaitDelay = 5 * time.Second
		if out, err := cmd.CombinedOutput(); err != nil {
			b.stopErr = fmt.Errorf("stop box %s: %w\n%s", b.Name, err, out)
		}
		if b.rootFD != nil {
			b.rootFD.Close()
		}
		defer func() {
			if b.reserved {
				releaseName(b.Name)
			}
		}()
		if b.watchW != nil {
			// Wait for the watcher's (now no-op) stop, so it cannot hit a
			// later box of the same name.
			b.watchW.Close()
			select {
			case <-b.watchDone:
			case <-ctx.Done():
			}
		}
	})
	return b.stopErr
}

// Command prepares args to run inside the box: in all its namespaces, in its
// root cgroup in every hierarchy, with a clean environment (PATH=ExecPath,
// HOME=/root, LANG=C.UTF-8). Use it to stream output or feed stdin; Exec for
// the common case. A process it starts that outlives the command stays in the
// box until Stop; it must not keep the command's stdout/stderr open (redirect
// it), or Exec waits WaitDelay (5s) for them and returns exec.ErrWaitDelay.
// Cancelling ctx kills the command's whole process group, also inside the box.
func (b *Box) Command(ctx context.Context, args ...string) *exec.Cmd {
	// The shell moves itself into the box's cgroups, then becomes nsenter.
	const join = `for f in $SDBOX_JOIN; do echo $$ > "$f" || exit 125; done; exec "$@"`
	argv := append([]string{"-c", join, "sh",
		"nsenter", "-t", strconv.Itoa(b.InitPID), "-a", "--",
		"env", "-i", "PATH=" + ExecPath, "HOME=/root", "LANG=C.UTF-8", "TERM=dumb"}, args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.Env = []string{"SDBOX_JOIN=" + strings.Join(b.joins, " "), "PATH=" + os.Getenv("PATH")}
	// nsenter forks the command (to enter the PID namespace) and does not pass
	// signals on; a process group lets ctx's cancel kill both.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// Exec runs args inside the box (see Command) and returns its combined
// output. The error carries the output too.
func (b *Box) Exec(ctx context.Context, args ...string) ([]byte, error) {
	out, err := b.Command(ctx, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("exec %q in box %s: %w\n%s", args, b.Name, err, out)
	}
	return out, nil
}

// HostPath returns where containerPath of the box is seen from the host,
// without resolving symlinks; prefer WriteFile/ReadFile, which resolve them
// inside the box.
func (b *Box) HostPath(containerPath string) string {
	return filepath.Join(b.Root, containerPath)
}

// resolve follows symlinks in containerPath as the box would (absolute
// targets are relative to the box's root) and returns a clean relative path
// for b.rootFD; the last component is resolved too when it exists.
func (b *Box) resolve(containerPath string) (string, error) {
	if !path.IsAbs(containerPath) {
		return "", fmt.Errorf("resolve %q: want an absolute path in the box", containerPath)
	}
	todo := strings.Split(strings.Trim(path.Clean(containerPath), "/"), "/")
	var done []string
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(done) > 0 {
				done = done[:len(done)-1]
			}
			continue
		}
		cur := path.Join(append(append([]string{}, done...), c)...)
		fi, err := b.rootFD.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			done = append(done, c)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("resolve %s in box: %w", containerPath, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = append(done, c)
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("resolve %s in box: too many symlinks", containerPath)
		}
		target, err := b.rootFD.Readlink(cur)
		if err != nil {
			return "", fmt.Errorf("resolve %s in box: %w", containerPath, err)
		}
		if path.IsAbs(target) {
			done = nil
		}
		todo = append(strings.Split(strings.Trim(target, "/"), "/"), todo...)
	}
	if len(done) == 0 {
		return ".", nil
	}
	return path.Join(done...), nil
}

// WriteFile writes data to containerPath in the box's (tmpfs overlay) rootfs,
// creating parent directories (0755). It writes a temp file and renames it, so
// replacing a running binary works.
func (b *Box) WriteFile(containerPath string, data []byte, mode fs.FileMode) error {
	return b.writeFrom(containerPath, bytes.NewReader(data), mode)
}

// CopyIn copies hostPath (e.g. a freshly built cellguard) to containerPath in
// the box, like WriteFile.
func (b *Box) CopyIn(hostPath, containerPath string, mode fs.FileMode) error {
	f, err := os.Open(hostPath)
	if err != nil {
		return fmt.Errorf("copy %s into box %s: %w", hostPath, b.Name, err)
	}
	defer f.Close()
	return b.writeFrom(containerPath, f, mode)
}

func (b *Box) writeFrom(containerPath string, r io.Reader, mode fs.FileMode) error {
	rel, err := b.resolve(containerPath)
	if err != nil {
		return err
	}
	dir := path.Dir(rel)
	if err := b.rootFD.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s in box %s: %w", containerPath, b.Name, err)
	}
	tmp := path.Join(dir, fmt.Sprintf(".sdbox-tmp-%d-%s", os.Getpid(), path.Base(rel)))
	// Scripts written here run in the box: no fork may copy the descriptor
	// (testkit.WriteExec).
	err = testkit.NoForks(func() error {
		f, err := b.rootFD.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode.Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err == nil {
		err = b.rootFD.Chmod(tmp, mode) // umask and special bits
	}
	if err == nil {
		err = b.rootFD.Rename(tmp, rel)
	}
	if err != nil {
		b.rootFD.Remove(tmp)
		return fmt.Errorf("write %s in box %s: %w", containerPath, b.Name, err)
	}
	return nil
}

// ReadFile reads containerPath from the box, resolving symlinks inside it.
func (b *Box) ReadFile(containerPath string) ([]byte, error) {
	rel, err := b.resolve(containerPath)
	if err != nil {
		return nil, err
	}
	data, err := b.rootFD.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("read %s in box %s: %w", containerPath, b.Name, err)
	}
	return data, nil
}

// Console returns what the box's systemd printed on its console so far. It
// holds what the journal cannot: messages from before journald started, such
// as the ordering cycles systemd breaks while it queues the boot.
func (b *Box) Console() ([]byte, error) {
	return os.ReadFile(filepath.Join(b.State, "console.log"))
}

// ReadCgroup returns the cgroups of pid (a PID inside the box, e.g. a unit's
// MainPID) as the box sees them: hierarchy field of /proc/<pid>/cgroup
// ("memory", "name=systemd", "" for cgroup v2) -> path relative to the box's
// cgroup root, e.g. "/system.slice/foo.service".
func (b *Box) ReadCgroup(pid int) (map[string]string, error) {
	// The box's /proc numbers PIDs as the box does; paths are rendered in our
	// cgroup namespace (host paths), so strip the box's root.
	data, err := os.ReadFile(filepath.Join(b.Root, "proc", strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("read cgroups of pid %d in box %s: %w", pid, b.Name, err)
	}
	m := map[string]string{}
	for k, p := range parseCgroup(data) {
		pre, ok := b.prefixes[k]
		if !ok {
			continue
		}
		switch {
		case p == pre:
			m[k] = "/"
		case strings.HasPrefix(p, pre+"/"):
			m[k] = strings.TrimPrefix(p, pre)
		default:
			return nil, fmt.Errorf("read cgroups of pid %d in box %s: %s path %q is outside the box root %q", pid, b.Name, k, p, pre)
		}
	}
	return m, nil
}
