package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// drainWorkerEnv tells a drain that it is the supervised worker and on
// which descriptor it reports its exit code ("3": ExtraFiles[0]).
const drainWorkerEnv = "CELLGUARD_DRAIN_WORKER_FD"

// selfDrainWorker is Env.DrainChild for the real binary: this very binary
// (/proc/self/exe is the running file, even if an update replaced the
// path since) as `cellguard drain ARGS`.
func selfDrainWorker(args []string) *exec.Cmd {
	cmd := exec.Command("/proc/self/exe", append([]string{"drain"}, args...)...)
	cmd.Args[0] = "cellguard"
	// a worker never outlives its supervisor (timeout's SIGKILL of the group reaches both anyway)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// supervised reports whether this drain should run its work in a child:
// a crash that no recover catches (a panic in another goroutine, a Go
// runtime fatal error, the OOM killer) ends only the worker, and the
// supervisor still writes the could-not-run metrics and prints 0.
func (d *drainRun) supervised() bool {
	return d.env.DrainChild != nil && d.env.Getenv(drainWorkerEnv) == ""
}

// supervise runs the drain in a worker (Env.DrainChild with args) and
// relays its stdout and exit code once the worker says it finished, which
// it does only after its textfile and its integer. A worker that dies
// without saying so crashed: the supervisor then does what the worker's
// own could-not-run path would have (log, textfile, 0 on stdout, exit 2).
// A cancel (SIGTERM from timeout or the agent) is passed on: the worker
// reports what finished, as it does unsupervised.
func (d *drainRun) supervise(ctx context.Context, args []string) int {
	r, w, err := os.Pipe()
	if err != nil {
		return d.runUnsupervised(ctx, fmt.Errorf("pipe for the drain worker: %w", err))
	}
	cmd := d.env.DrainChild(args)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, drainWorkerEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, d.env.Stderr
	// what the worker's own probes hold of its stdout must not hold us
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return d.runUnsupervised(ctx, fmt.Errorf("start the drain worker: %w", err))
	}
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
	report, _ := io.ReadAll(io.LimitReader(r, 64)) // EOF when the worker exits
	r.Close()
	werr := cmd.Wait()
	stop()
	if code, ok := parseWorkerReport(report); ok {
		_, _ = d.env.Stdout.Write(out.Bytes())
		return code
	}
	return d.workerCrashed(werr, cmd.ProcessState, time.Since(start))
}

// runUnsupervised is the fallback when no worker can be started: the
// drain in this process, as before issue 23, saying why.
func (d *drainRun) runUnsupervised(ctx context.Context, why error) int {
	errorf(d.env, "%v; running the drain in this process, where a crash would leave the textfile stale", why)
	return d.run(ctx)
}

// reportToSupervisor writes code to the supervisor's descriptor, after
// the textfile and the integer, and closes it.
func (d *drainRun) reportToSupervisor(code int) {
	fd, err := strconv.Atoi(d.env.Getenv(drainWorkerEnv))
	if err != nil || fd < 3 {
		return
	}
	f := os.NewFile(uintptr(fd), "drain-supervisor")
	if f == nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintf(f, "exit=%d\n", code)
}

// markWorkerFD keeps the supervisor's descriptor out of everything the
// worker runs (probes): a probe left behind must not make the supervisor
// wait for it.
func markWorkerFD(env *Env) {
	if fd, err := strconv.Atoi(env.Getenv(drainWorkerEnv)); err == nil && fd >= 3 {
		syscall.CloseOnExec(fd)
	}
}

func parseWorkerReport(b []byte) (int, bool) {
	s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "exit=")
	if !ok {
		return 0, false
	}
	code, err := strconv.Atoi(s)
	return code, err == nil
}

// workerCrashed is the could-not-run path for a worker that died without
// reporting: the config is read again only for the textfile's path and
// the log (a worker that crashed has said nothing).
func (d *drainRun) workerCrashed(werr error, ps *os.ProcessState, took time.Duration) int {
	f, env := d.f, d.env
	logger, cfg, closer, err := f.setup(env, "drain")
	if err != nil {
		logger, closer = f.flagLogger(env, "drain")
		cfg = nil
	}
	defer closer()
	d.logger = logger
	how := fmt.Sprint(werr)
	if ps != nil {
		how = ps.String() // "exit status 2", "signal: killed"
	}
	logger.Error("worker-crashed", werr, lager.Data{"worker": how, "after": took.String(),
		"reason": "the drain's worker died without a verdict (a panic in a goroutine, a Go runtime fatal error, a kill): its stderr above says which"})
	return d.finish(cfg, nil, &cantRun{err: fmt.Errorf("cellguard drain crashed (%s) before its verdict", how),
		hint: "the trace is in this log; this drain let the VM go, and the textfile says could_not_run"})
}
