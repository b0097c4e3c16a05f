package safefile

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-time.Hour)
	files := map[string]time.Time{
		".cellguard-garden.service.tmp-123456": old, // ours, stale: removed
		".60-cellguard.conf.tmp-42":            old, // ours, stale: removed
		".cellguard-garden.service.tmp-7":      now, // ours, a writer in flight: kept
		".other.service.tmp-99":                old, // someone else's: kept
		"cellguard-garden.service":             old, // the file itself: kept
		".cellguard-garden.service.tmp-abc":    old, // not CreateTemp's name: kept
		".cellguard-x.service.tmp-1.bak":       old, // not CreateTemp's name: kept
	}
	for name, mtime := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, ".cellguard-dir.service.tmp-5"), 0o755); err != nil { // not a regular file: kept
		t.Fatal(err)
	}
	ours := func(target string) bool {
		return strings.HasPrefix(target, "cellguard-") || target == "60-cellguard.conf"
	}
	removed, err := RemoveStaleTemps(dir, ours, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, ".60-cellguard.conf.tmp-42"), filepath.Join(dir, ".cellguard-garden.service.tmp-123456")}
	if !reflect.DeepEqual(removed, want) {
		t.Fatalf("removed %q, want %q", removed, want)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != len(files)+1-len(want) {
		t.Errorf("%d entries left, want %d", len(ents), len(files)+1-len(want))
	}
	if removed, err := RemoveStaleTemps(filepath.Join(dir, "missing"), ours, 0, now); err != nil || removed != nil {
		t.Errorf("missing dir: %v %v", removed, err)
	}
}

func TestTempTargetMatchesWriteFileAtomic(t *testing.T) {
	for name, want := range map[string]string{
		".cellguard-garden.service.tmp-3141592653": "cellguard-garden.service",
		".50-cellguard-delegate.conf.tmp-0":        "50-cellguard-delegate.conf",
		".a.tmp-1.tmp-2":                           "a.tmp-1",
	} {
		if got, ok := TempTarget(name); !ok || got != want {
			t.Errorf("TempTarget(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"cellguard.service", ".x.tmp-", ".x.tmp-1a", "x.tmp-1"} {
		if _, ok := TempTarget(name); ok {
			t.Errorf("TempTarget(%q) matched", name)
		}
	}
}
