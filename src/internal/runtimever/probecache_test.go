package runtimever

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestProbeCacheExecsOncePerFile: with a cache, a second probe of the same
// file runs nothing; replacing the file probes again; without a cache every
// probe runs the binary.
func TestProbeCacheExecsOncePerFile(t *testing.T) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	bin := filepath.Join(dir, "runc")
	write := func(version string) {
		script := "#!/bin/sh\necho \"$@\" >> " + calls + "\n" +
			"[ \"$1\" = --version ] && printf 'runc version " + version + "\\ncommit: v" + version + "\\n'\nexit 0\n"
		tmp := bin + ".new"
		testkit.WriteExec(t, tmp, script)
		must(t, os.Rename(tmp, bin)) // a new inode, as a package upgrade makes
	}
	count := func() int {
		b, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return 0
		}
		must(t, err)
		return strings.Count(string(b), "\n")
	}
	b := Binary{Component: Runc, Path: "/usr/bin/runc", HostPath: bin}
	ctx := context.Background()

	write("1.1.5")
	p := Prober{Cache: &ProbeCache{}}
	first, err := p.Probe(ctx, b)
	must(t, err)
	execs := count() // --version and features
	if execs == 0 || first.Version.String() != "1.1.5" {
		t.Fatalf("first probe: %d execs, version %s", execs, first.Version)
	}
	again, err := p.Probe(ctx, b)
	must(t, err)
	if n := count(); n != execs || again.Version.String() != "1.1.5" {
		t.Fatalf("cached probe ran the binary (%d execs, was %d) or changed its answer (%s)", n, execs, again.Version)
	}

	time.Sleep(10 * time.Millisecond) // a different mtime too
	write("1.1.12")
	upgraded, err := p.Probe(ctx, b)
	must(t, err)
	if n := count(); n != 2*execs || upgraded.Version.String() != "1.1.12" {
		t.Fatalf("after replacing the file: %d execs (want %d), version %s (want 1.1.12)", n, 2*execs, upgraded.Version)
	}

	_, err = Prober{}.Probe(ctx, b)
	must(t, err)
	if n := count(); n != 3*execs {
		t.Fatalf("without a cache: %d execs, want %d", n, 3*execs)
	}
}
