package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/lager/v3"
)

// line decodes the one lager line in b.
func line(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(b), &m); err != nil {
		t.Fatalf("not one JSON line: %q: %v", b, err)
	}
	return m
}

func TestNewWritesLagerJSON(t *testing.T) {
	for _, tc := range []struct {
		format string
		stamp  func(any) bool // what the timestamp looks like
	}{
		{"", func(v any) bool { s, ok := v.(string); return ok && !strings.Contains(s, "T") }},
		{"unix-epoch", func(v any) bool { s, ok := v.(string); return ok && !strings.Contains(s, "T") }},
		{"RFC3339", func(v any) bool {
			s, _ := v.(string)
			_, err := time.Parse(time.RFC3339Nano, s)
			return err == nil
		}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			var stderr bytes.Buffer
			logger, closer, err := New(Options{TimeFormat: tc.format}, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer closer()
			logger.Session("apply").Info("key-changed", lager.Data{"key": "kernel.pid_max"})
			m := line(t, stderr.Bytes())
			if m["source"] != "cellguard" || m["message"] != "cellguard.apply.key-changed" {
				t.Fatalf("source/message: %v", m)
			}
			if d, _ := m["data"].(map[string]any); d["key"] != "kernel.pid_max" {
				t.Fatalf("data: %v", m)
			}
			if ts := m["timestamp"]; !tc.stamp(ts) {
				t.Fatalf("timestamp %v (%T) for format %q: %v", ts, ts, tc.format, m)
			}
		})
	}
}

func TestNewAppendsToFileNotStderr(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cellguard.log")
	if err := os.WriteFile(p, []byte("earlier\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	logger, closer, err := New(Options{File: p}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("hello")
	if err := closer(); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 {
		t.Errorf("logged to stderr with a log file set: %q", stderr.String())
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(b), "\n")
	if first != "earlier" || line(t, []byte(rest))["message"] != "cellguard.hello" {
		t.Fatalf("log file does not hold the old line and the new one: %q", b)
	}
}

func TestLevelFilters(t *testing.T) {
	var stderr bytes.Buffer
	logger, _, err := New(Options{Level: "error"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("quiet")
	logger.Debug("quieter")
	if stderr.Len() != 0 {
		t.Fatalf("level error logged info or debug: %q", stderr.String())
	}
}

func TestBadOptions(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"time format", Options{TimeFormat: "iso"}, "unknown log time format"},
		{"level", Options{Level: "loud"}, "unknown log level"},
		{"file in a missing dir", Options{File: filepath.Join(dir, "no/such/dir/x.log")}, "open log file"},
		{"level with a file", Options{File: filepath.Join(dir, "leak.log"), Level: "loud"}, "unknown log level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := New(tc.opts, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want %q", err, tc.want)
			}
		})
	}
	// Bad options are refused before the log file is created.
	if _, err := os.Stat(filepath.Join(dir, "leak.log")); err == nil {
		t.Error("a log file was created for options that were refused")
	}
}

func TestParseLevel(t *testing.T) {
	for in, want := range map[string]lager.LogLevel{"": lager.INFO, "info": lager.INFO, "DEBUG": lager.DEBUG, "error": lager.ERROR, "fatal": lager.FATAL} {
		if got, err := ParseLevel(in); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}
