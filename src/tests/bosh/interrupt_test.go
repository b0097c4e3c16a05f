package bosh

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

const interruptChildEnv = "CELLGUARD_BOSH_INTERRUPT_CHILD"

// TestHelperLabUntilInterrupted is the child of TestCtrlCTakesTheLabDown: it
// makes the lab and a nats-server in it, as TestQEMUCPIBootsNoble does,
// prints the lab's namespace and state directory, and waits.
func TestHelperLabUntilInterrupted(t *testing.T) {
	if os.Getenv(interruptChildEnv) != "1" {
		t.Skip("the child of TestCtrlCTakesTheLabDown")
	}
	l := newLab(t)
	os.Stdout.WriteString("state " + l.state + "\n")
	l.startNATS(t, natsServerBin(t), os.DevNull)
	os.Stdout.WriteString("lab " + l.path + "\n")
	select {}
}

// TestCtrlCTakesTheLabDown: a Ctrl-C of go test while a test holds the lab
// (before: go test died and left the lab's namespace, its bridge and
// nats-server) takes them down before the process exits.
func TestCtrlCTakesTheLabDown(t *testing.T) {
	testkit.RequireRoot(t, "the lab's network namespace")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperLabUntilInterrupted$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), interruptChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // our signal only
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	var netns string
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if state, ok := strings.CutPrefix(lines.Text(), "state "); ok {
			// What a child that did not take its lab down leaves: the
			// test fails, and leaves nothing.
			t.Cleanup(func() {
				exec.Command("bash", filepath.Join("..", "director", "director.sh"), "down", state).Run()
				os.RemoveAll(filepath.Dir(state))
			})
		}
		if p, ok := strings.CutPrefix(lines.Text(), "lab "); ok {
			netns = p
			break
		}
	}
	if netns == "" {
		t.Fatalf("the child made no lab:\n%s", stderr.String())
	}
	go func() { // keep the pipe drained
		for lines.Scan() {
		}
	}()
	nats := natsInLab(t, netns)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(3 * time.Minute): // a liveness bound, not a timing
		t.Fatalf("the child still runs 3 minutes after SIGINT:\n%s", stderr.String())
	}
	t.Logf("child after SIGINT: %v\n%s", err, testkit.Tail(stderr.String(), 10))
	if _, err := os.Stat(netns); !os.IsNotExist(err) {
		t.Errorf("the lab's namespace %s outlived the interrupted test (stat: %v)", netns, err)
	}
	if syscall.Kill(nats, 0) == nil {
		t.Errorf("nats-server pid %d outlived the interrupted test", nats)
		syscall.Kill(nats, syscall.SIGKILL) // the child's, started by this test
	}
}

// natsInLab is the pid of the nats-server whose network namespace is the
// lab's (it may take a moment to exec); the test fails without one.
func natsInLab(t *testing.T, netns string) int {
	t.Helper()
	var want syscall.Stat_t
	if err := syscall.Stat(netns, &want); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		comms, _ := filepath.Glob("/proc/[0-9]*/comm")
		for _, c := range comms {
			if b, err := os.ReadFile(c); err != nil || strings.TrimSpace(string(b)) != "nats-server" {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(filepath.Dir(c), "ns", "net"), &st) == nil && st.Ino == want.Ino && st.Dev == want.Dev {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(c)))
				return pid
			}
		}
	}
	t.Fatalf("no nats-server in the lab's namespace %s after a minute", netns)
	return 0
}
