// Command agent-update updates the local cell's instance over the BOSH
// agent's HTTPS API as the BOSH director does (package update): drain with
// the new spec, stop, apply, pre-start, start, wait for running, post-start.
// One line per step on stdout; on failure the step and the agent's error
// text, and exit status 1. With -script NAME it only runs that job script
// (run_script) on the instance.
//
//	agent-update -mbus https://mbus:PW@127.0.0.1:PORT -ca ca.pem -manifest new.yml \
//	  -group cell -release cellguard=cellguard.tgz -release cellguard-test=test.tgz
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	boshlog "github.com/cloudfoundry/bosh-utils/logger"

	"github.com/cloudfoundry/cellguard/spec/update"
)

type releases map[string]string

func (r releases) String() string { return fmt.Sprint(map[string]string(r)) }
func (r releases) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok || name == "" || path == "" {
		return fmt.Errorf("want NAME=TARBALL, got %q", v)
	}
	r[name] = path
	return nil
}

func main() {
	rels := releases{}
	mbus := flag.String("mbus", "", "the agent's mbus URL (cloud_provider.mbus)")
	caFile := flag.String("ca", "", "PEM file of the CA of the agent's mbus certificate")
	manifest := flag.String("manifest", "", "interpolated manifest with the new properties")
	group := flag.String("group", "cell", "instance group")
	work := flag.String("work", "", "scratch directory (default: a new temporary one)")
	logFile := flag.String("log", "", "bosh-utils debug log of the agent client (default: none)")
	timeout := flag.Duration("timeout", 10*time.Minute, "bound for the whole update")
	script := flag.String("script", "", "only run this job script (run_script), e.g. pre-start")
	flag.Var(rels, "release", "NAME=TARBALL of a release the instance group's jobs come from (repeat)")
	flag.Parse()
	if *mbus == "" || *caFile == "" || (*script == "" && (*manifest == "" || len(rels) == 0)) {
		fmt.Fprintln(os.Stderr, "agent-update: -mbus, -ca and either -script or -manifest and -release are required")
		os.Exit(2)
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		fatal(2, "read CA: %v", err)
	}
	if *script != "" {
		t0 := time.Now()
		if err := update.RunScript(*mbus, string(ca), *script, nil); err != nil {
			fmt.Printf("agent-update: FAILED at %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("agent-update: run_script %s: ok (%.1fs)\n", *script, time.Since(t0).Seconds())
		return
	}
	m, err := os.ReadFile(*manifest)
	if err != nil {
		fatal(2, "read manifest: %v", err)
	}
	os.Exit(runUpdate(update.Config{MbusURL: *mbus, CACert: string(ca), Manifest: m, Group: *group, Releases: rels},
		*work, *logFile, *timeout))
}

// runUpdate runs the update and returns the exit status, so that its
// deferred clean-ups (the scratch directory, the log) run on failure too.
func runUpdate(cfg update.Config, work, logFile string, timeout time.Duration) int {
	cfg.WorkDir = work
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "agent-update-")
		if err != nil {
			fmt.Fprintf(os.Stderr, "agent-update: scratch dir: %v\n", err)
			return 2
		}
		defer os.RemoveAll(dir)
		cfg.WorkDir = dir
	}
	cfg.Logger = boshlog.NewLogger(boshlog.LevelNone)
	if logFile != "" {
		f, err := os.Create(logFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "agent-update: open log: %v\n", err)
			return 2
		}
		defer f.Close()
		cfg.Logger = boshlog.NewWriterLogger(boshlog.LevelDebug, f)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	t0 := time.Now()
	err := update.Run(ctx, cfg, func(s update.Step) {
		fmt.Printf("agent-update: %s: ok (%.1fs)%s\n", s.Name, s.Took.Seconds(), prefixed(s.Detail))
	})
	if err != nil {
		if se, ok := err.(*update.StepError); ok {
			fmt.Printf("agent-update: FAILED at %s: %v\n", se.Step, se.Err)
		} else {
			fmt.Printf("agent-update: FAILED: %v\n", err)
		}
		return 1
	}
	fmt.Printf("agent-update: done in %.1fs\n", time.Since(t0).Seconds())
	return 0
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

func fatal(code int, format string, a ...any) {
	fmt.Fprintf(os.Stderr, "agent-update: "+format+"\n", a...)
	os.Exit(code)
}
