//go:build ignore

// Command gclient is cellguard's own Garden client for the real-Garden
// integration tests: create (raw rootfs), run, list, info and destroy through
// the garden Go client, one JSON object per call on stdout. create can ask
// for a privileged container and for limits; run with -image makes a pea.
//
// It is compiled only inside an unpacked guardian tree against that tree's
// vendored garden client (src/tests/garden/build.sh copies it to
// cmd/cellguard-gclient and builds the file by name with -mod=vendor), so
// the client always speaks the API of the gdn it drives. The ignore tag keeps
// it out of cellguard's own module, which does not require garden: `go mod
// vendor` (release-sync) reads every other tag's files; a file named on the
// command line builds whatever its tags.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"code.cloudfoundry.org/garden"
	"code.cloudfoundry.org/garden/client"
	"code.cloudfoundry.org/garden/client/connection"
)

// result is what every subcommand prints: the operation, its subject, how
// long Garden took and Garden's own error text when it failed.
type result struct {
	Op        string            `json:"op"`
	Handle    string            `json:"handle,omitempty"`
	Seconds   float64           `json:"seconds"`
	Error     string            `json:"error,omitempty"`
	Handles   []string          `json:"handles,omitempty"`
	ProcessID string            `json:"process_id,omitempty"`
	ExitCode  *int              `json:"exit_code,omitempty"`
	Stdout    string            `json:"stdout,omitempty"`
	Stderr    string            `json:"stderr,omitempty"`
	State     string            `json:"state,omitempty"`
	Pids      []string          `json:"process_ids,omitempty"`
	Props     map[string]string `json:"properties,omitempty"`
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("gclient", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:7777", "Garden's address (host:port, or a socket path with -network unix)")
	network := fs.String("network", "tcp", "tcp or unix")
	handle := fs.String("handle", "", "container handle")
	rootfs := fs.String("rootfs", "", "create: directory of a raw rootfs (raw:///DIR)")
	wait := fs.Bool("wait", false, "run: wait for the process and report its exit code and output")
	user := fs.String("user", "root", "run: user inside the container")
	privileged := fs.Bool("privileged", false, "create: a privileged container (no user namespace)")
	memoryMB := fs.Uint64("memory-mb", 0, "create: memory limit in MiB (0: none)")
	cpuWeight := fs.Uint64("cpu-weight", 0, "create: CPU weight, Garden's shares (0: none)")
	pidsMax := fs.Uint64("pids", 0, "create: pids limit (0: none)")
	image := fs.String("image", "", "run: directory of a raw rootfs for the process, which makes it a pea (raw:///DIR)")
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: gclient ping|create|run|list|info|destroy [flags] [-- path args...]")
		return 2
	}
	op := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	c := client.New(connection.New(*network, *addr))
	res := result{Op: op, Handle: *handle}
	start := time.Now()
	var err error
	switch op {
	case "ping":
		err = c.Ping()
	case "create":
		err = create(c, *handle, *rootfs, *privileged, garden.Limits{
			Memory: garden.MemoryLimits{LimitInBytes: *memoryMB << 20},
			CPU:    garden.CPULimits{Weight: *cpuWeight},
			Pid:    garden.PidLimits{Max: *pidsMax},
		})
	case "run":
		err = runProcess(c, *handle, *user, *image, fs.Args(), *wait, &res)
	case "list":
		err = list(c, &res)
	case "info":
		err = info(c, *handle, &res)
	case "destroy":
		err = c.Destroy(*handle)
	default:
		fmt.Fprintf(os.Stderr, "gclient: error: unknown operation %q\n", op)
		return 2
	}
	res.Seconds = time.Since(start).Seconds()
	if err != nil {
		res.Error = err.Error()
	}
	out, merr := json.Marshal(res)
	if merr != nil {
		fmt.Fprintf(os.Stderr, "gclient: error: encode result: %v\n", merr)
		return 1
	}
	fmt.Println(string(out))
	if err != nil {
		return 1
	}
	return 0
}

func create(c garden.Client, handle, rootfs string, privileged bool, limits garden.Limits) error {
	if handle == "" || rootfs == "" {
		return errors.New("create needs -handle and -rootfs")
	}
	// unprivileged by default, as CF apps are: the boxes' bounding set
	// lacks CAP_SYS_RESOURCE, which a privileged container's init needs (a
	// VM has it)
	_, err := c.Create(garden.ContainerSpec{
		Handle:     handle,
		Image:      garden.ImageRef{URI: "raw://" + rootfs},
		Privileged: privileged,
		Limits:     limits,
	})
	if err != nil {
		return fmt.Errorf("create container %s: %w", handle, err)
	}
	return nil
}

func runProcess(c garden.Client, handle, user, image string, argv []string, wait bool, res *result) error {
	if handle == "" || len(argv) == 0 {
		return errors.New("run needs -handle and -- path args...")
	}
	ctr, err := c.Lookup(handle)
	if err != nil {
		return fmt.Errorf("look up container %s: %w", handle, err)
	}
	var stdout, stderr bytes.Buffer
	pio := garden.ProcessIO{}
	if wait {
		pio.Stdout, pio.Stderr = &stdout, &stderr
	}
	spec := garden.ProcessSpec{Path: argv[0], Args: argv[1:], User: user}
	if image != "" {
		// a process with its own image is a pea: Garden runs it as a
		// container of its own beside the sandbox (guardian rundmc/peas)
		spec.Image = garden.ImageRef{URI: "raw://" + image}
	}
	p, err := ctr.Run(spec, pio)
	if err != nil {
		return fmt.Errorf("run %s in container %s: %w", argv[0], handle, err)
	}
	res.ProcessID = p.ID()
	if !wait {
		// Garden keeps the process running after its client goes away
		return nil
	}
	code, err := p.Wait()
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if err != nil {
		return fmt.Errorf("wait for process %s in container %s: %w", p.ID(), handle, err)
	}
	res.ExitCode = &code
	return nil
}

func list(c garden.Client, res *result) error {
	ctrs, err := c.Containers(nil)
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	res.Handles = []string{}
	for _, ctr := range ctrs {
		res.Handles = append(res.Handles, ctr.Handle())
	}
	return nil
}

func info(c garden.Client, handle string, res *result) error {
	ctr, err := c.Lookup(handle)
	if err != nil {
		return fmt.Errorf("look up container %s: %w", handle, err)
	}
	in, err := ctr.Info()
	if err != nil {
		return fmt.Errorf("info of container %s: %w", handle, err)
	}
	res.State, res.Pids = in.State, in.ProcessIDs
	res.Props = map[string]string(in.Properties)
	return nil
}
