// Package boshlab is test-only: the project's BOSH director lab as tests
// reach it. Env is director.sh's STATE/env.json, Bosh runs bosh-cli in the
// lab's network namespace (every call logged to a file), BuildRelease makes
// the cellguard dev release from a copy of the work tree. Used by
// src/tests/director and src/tests/fleet.
package boshlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Env is the director's STATE/env.json (src/tests/director/director.sh).
type Env struct {
	Netns         string `json:"netns"`
	Bridge        string `json:"bridge"`
	Gateway       string `json:"gateway"`
	CIDR          string `json:"cidr"`
	DirectorURL   string `json:"director_url"`
	CACert        string `json:"ca_cert"`
	Client        string `json:"client"`
	ClientSecret  string `json:"client_secret"`
	NatsURL       string `json:"nats_url"`
	NatsCA        string `json:"nats_ca"`
	BlobstorePath string `json:"blobstore_path"`
	CPIPath       string `json:"cpi_path"`
	StateDir      string `json:"state_dir"`
}

// ReadEnv reads the director's env.json.
func ReadEnv(path string) (Env, error) {
	var e Env
	b, err := os.ReadFile(path)
	if err != nil {
		return e, fmt.Errorf("read director env: %w", err)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("parse director env %s: %w", path, err)
	}
	if e.Netns == "" || e.Bridge == "" || e.NatsURL == "" || e.BlobstorePath == "" {
		return e, fmt.Errorf("director env %s lacks netns, bridge, nats_url or blobstore_path", path)
	}
	return e, nil
}

// Bosh runs bosh-cli against the director from inside the lab's network
// namespace, where the director's API listens.
type Bosh struct {
	Bin  string // bosh-cli
	Env  Env
	Home string       // HOME and TMPDIR for bosh-cli: nothing lands in the caller's
	Logs string       // every call's output goes to Logs/NNN-VERB.log
	n    atomic.Int64 // calls so far: lanes run bosh-cli at once
}

// Result is one bosh-cli run.
type Result struct {
	Args     []string
	Output   string // stdout and stderr
	Stdout   string
	ExitCode int
	Took     time.Duration
	Log      string
}

// Run runs bosh-cli with args; a non-zero exit is a Result, not an error.
// The error is for what kept bosh-cli from running at all.
func (b *Bosh) Run(ctx context.Context, args ...string) (Result, error) {
	n := b.n.Add(1)
	verb := "bosh"
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			verb = a
			break
		}
	}
	r := Result{Args: args, Log: filepath.Join(b.Logs, fmt.Sprintf("%03d-%s.log", n, verb))}
	full := append([]string{"--net=" + b.Env.Netns, "--", b.Bin, "--non-interactive", "--no-color"}, args...)
	cmd := exec.CommandContext(ctx, "nsenter", full...)
	cmd.Env = append(os.Environ(),
		"HOME="+b.Home, "TMPDIR="+b.Home,
		"BOSH_ENVIRONMENT="+b.Env.DirectorURL, "BOSH_CA_CERT="+b.Env.CACert,
		"BOSH_CLIENT="+b.Env.Client, "BOSH_CLIENT_SECRET="+b.Env.ClientSecret)
	// Both streams in order in out, stdout alone too; exec copies them in
	// two goroutines, so out is locked.
	var out lockedBuffer
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&out, &stdout), &out
	t0 := time.Now()
	err := cmd.Run()
	r.Took = time.Since(t0)
	r.Output, r.Stdout = out.String(), stdout.String()
	_ = os.WriteFile(r.Log, []byte("bosh "+strings.Join(args, " ")+"\n\n"+r.Output), 0o600)
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			return r, fmt.Errorf("run bosh %s: %w", strings.Join(args, " "), err)
		}
		r.ExitCode = ee.ExitCode()
	}
	return r, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// MustRun is Run, with a non-zero exit as the error.
func (b *Bosh) MustRun(ctx context.Context, args ...string) (Result, error) {
	r, err := b.Run(ctx, args...)
	if err == nil && r.ExitCode != 0 {
		err = fmt.Errorf("bosh %s exited %d: %s (log %s)", strings.Join(args, " "), r.ExitCode, LastLines(r.Output, 6), r.Log)
	}
	return r, err
}

// Table is one table of bosh-cli's --json output.
type Table struct {
	Content string              `json:"Content"`
	Rows    []map[string]string `json:"Rows"`
}

// Tables runs bosh-cli with --json and returns its tables.
func (b *Bosh) Tables(ctx context.Context, args ...string) ([]Table, error) {
	r, err := b.MustRun(ctx, append([]string{"--json"}, args...)...)
	if err != nil {
		return nil, err
	}
	var out struct {
		Tables []Table `json:"Tables"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &out); err != nil {
		return nil, fmt.Errorf("parse bosh %s --json: %w (log %s)", strings.Join(args, " "), err, r.Log)
	}
	return out.Tables, nil
}

// LastLines is s's last n lines joined by " | ": a failure's gist in one line.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// BuildRelease makes the cellguard dev release tarball in dir
// (ci/scripts/create-release.sh, what make release runs) from a copy of the
// work tree at repo, tracked and untracked-but-not-ignored files: a test
// never writes into the repository and does not race a make release or
// another test's build.
func BuildRelease(ctx context.Context, repo, dir string) (string, error) {
	rel := filepath.Join(dir, "release")
	tarball := filepath.Join(dir, "cellguard-dev.tgz")
	script := `set -euo pipefail
mkdir -p "$2"
cd "$1" && git ls-files -z --cached --others --exclude-standard |
  while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
  tar --null -T - -cf - | tar -xf - -C "$2"
bash "$2/ci/scripts/create-release.sh" "$2" "$3"`
	out, err := exec.CommandContext(ctx, "bash", "-c", script, "bash", repo, rel, tarball).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build the release tarball from %s: %w\n%s", repo, err, LastLines(string(out), 15))
	}
	return tarball, nil
}
