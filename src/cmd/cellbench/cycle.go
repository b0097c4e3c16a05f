package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/benchcycle"
)

// The spec and result types are shared with src/tests/perf, which writes
// the spec and reads the result: see testkit/benchcycle.
type (
	CycleSpec   = benchcycle.Spec
	Variant     = benchcycle.Variant
	CycleResult = benchcycle.Result
)

// cycle runs the variants round-robin, Runs times each, so load on the
// machine spreads over all of them alike, and prints CycleResult as JSON.
func cycle(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: cellbench cycle SPEC-JSON")
	}
	var spec CycleSpec
	if err := json.Unmarshal([]byte(args[0]), &spec); err != nil {
		return fmt.Errorf("cycle spec: %w", err)
	}
	res := CycleResult{}
	for i := 0; i < spec.Runs; i++ {
		for _, v := range spec.Variants {
			r := res[v.Name]
			start, err := runStart(&spec, v)
			if err != nil {
				return fmt.Errorf("%s run %d start: %w", v.Name, i+1, err)
			}
			r.Start = append(r.Start, start.Nanoseconds())
			if len(v.Stop) > 0 {
				stop, err := runStop(&spec, v)
				if err != nil {
					return fmt.Errorf("%s run %d stop: %w", v.Name, i+1, err)
				}
				r.Stop = append(r.Stop, stop.Nanoseconds())
			}
			res[v.Name] = r
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// waitLimit bounds every wait: a daemon that does not come up is an error,
// not a long sample.
const waitLimit = 30 * time.Second

func runStart(spec *CycleSpec, v Variant) (time.Duration, error) {
	if v.Wait {
		if pid, _ := readPID(spec.PIDFile); pid != 0 && alive(pid) {
			return 0, fmt.Errorf("daemon pid %d already runs", pid)
		}
	}
	if len(v.Prepare) > 0 {
		if out, err := exec.Command(v.Prepare[0], v.Prepare[1:]...).CombinedOutput(); err != nil {
			return 0, fmt.Errorf("prepare %v: %w\n%s", v.Prepare, err, out)
		}
	}
	cmd := exec.Command(v.Start[0], v.Start[1:]...)
	var out strings.Builder
	t0 := time.Now()
	if v.Detach {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return 0, err
		}
		go func() { _ = cmd.Wait() }() // reap the daemon when a stop ends it
	} else {
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return 0, fmt.Errorf("%v: %w\n%s", v.Start, err, out.String())
		}
	}
	if v.Wait {
		deadline := t0.Add(waitLimit)
		for {
			if pid, _ := readPID(spec.PIDFile); pid != 0 && alive(pid) {
				break
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("pidfile %s names no live process after %s", spec.PIDFile, waitLimit)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return time.Since(t0), nil
}

func runStop(spec *CycleSpec, v Variant) (time.Duration, error) {
	pid, err := readPID(spec.PIDFile)
	if err != nil || !alive(pid) {
		return 0, fmt.Errorf("no live daemon to stop (pidfile %s: %v)", spec.PIDFile, err)
	}
	var out strings.Builder
	cmd := exec.Command(v.Stop[0], v.Stop[1:]...)
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%v: %w\n%s", v.Stop, err, out.String())
	}
	deadline := t0.Add(waitLimit)
	for alive(pid) {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("pid %d still runs %s after stop", pid, waitLimit)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(t0), nil
}

func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// alive is true for a process that exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}
