// Command guestagent is the agent inside qemuvm's VMs: it answers the host's
// requests (package wire) on the virtio-serial port cellguard.agent, one at
// a time. The image builder (src/tests/qemu/image.sh) builds it static
// (CGO_ENABLED=0) into the image as /usr/local/sbin/cellguard-vm-agent, run
// by cellguard-vm-agent.service. It never forks unless asked to: an idle
// agent sleeps in read(2) on the port. Test tooling; never shipped.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/qemuvm/wire"
)

func main() {
	port := flag.String("port", "/dev/virtio-ports/"+wire.PortName, "virtio-serial port")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("cellguard-vm-agent: ")
	f := openPort(*port)
	log.Printf("serving on %s", *port)
	serve(f)
}

// openPort waits for udev's link to the port (the agent may start before
// udev has handled the device) and opens it.
func openPort(path string) *os.File {
	for i := 0; ; i++ {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err == nil {
			return f
		}
		if i%50 == 0 {
			log.Printf("waiting for %s: %v", path, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// serve answers requests forever. A read of 0 bytes means no host is
// connected to the port's socket (virtio_console returns EOF then): wait.
func serve(f *os.File) {
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			time.Sleep(200 * time.Millisecond)
			continue
		}
		if err != nil {
			log.Printf("read port: %v", err)
			time.Sleep(time.Second)
			continue
		}
		var req wire.Request
		if err := json.Unmarshal(line, &req); err != nil {
			log.Printf("bad request (%d bytes): %v", len(line), err)
			continue
		}
		resp := handle(req)
		resp.ID = req.ID
		b, err := json.Marshal(resp)
		if err != nil {
			log.Printf("encode response %d: %v", req.ID, err)
			continue
		}
		if _, err := f.Write(append(b, '\n')); err != nil {
			log.Printf("write response %d: %v", req.ID, err)
		}
	}
}

func handle(req wire.Request) wire.Response {
	switch req.Op {
	case wire.OpHello:
		return wire.Response{Hello: hello()}
	case wire.OpExec:
		return run(req)
	case wire.OpPut:
		if err := put(req.Path, req.Data, os.FileMode(req.Mode)); err != nil {
			return wire.Response{Exit: -1, Error: err.Error()}
		}
		return wire.Response{}
	}
	return wire.Response{Exit: -1, Error: fmt.Sprintf("unknown op %q", req.Op)}
}

func hello() string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	var u syscall.Utsname
	_ = syscall.Uname(&u)
	rel := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		rel = append(rel, byte(c))
	}
	return fmt.Sprintf("cellguard-vm-agent pid %d kernel %s boot %s", os.Getpid(), rel, strings.TrimSpace(string(boot)))
}

// run runs the command in its own process group, killed as a group at the
// timeout, so nothing it started outlives the request.
func run(req wire.Request) wire.Response {
	if len(req.Args) == 0 {
		return wire.Response{Exit: -1, Error: "exec: no command"}
	}
	ctx := context.Background()
	if req.TimeoutMS > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, req.Args[0], req.Args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8"}
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(req.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	resp := wire.Response{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Exit: cmd.ProcessState.ExitCode()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		resp.Error = fmt.Sprintf("exec %s: timed out after %v", req.Args[0], time.Duration(req.TimeoutMS)*time.Millisecond)
	case err != nil && !errors.As(err, &exitErr):
		resp.Error = fmt.Sprintf("exec %s: %v", req.Args[0], err)
	}
	return resp
}

func put(path string, data []byte, mode os.FileMode) error {
	if !filepath.IsAbs(path) {
		return fmt.Errorf("put %s: not an absolute path", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	tmp := path + ".cellguard-vm-agent.tmp"
	if err := os.WriteFile(tmp, data, mode.Perm()); err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	if err := os.Chmod(tmp, mode.Perm()); err != nil { // WriteFile's mode is masked by the umask
		os.Remove(tmp)
		return fmt.Errorf("put %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put %s: %w", path, err)
	}
	return nil
}
