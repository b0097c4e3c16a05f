package fleet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostSysctl: the first user raises a low value, the last one puts it
// back; a value already high enough is left alone.
func TestHostSysctl(t *testing.T) {
	p := filepath.Join(t.TempDir(), "max_user_instances")
	read := func() string { b, _ := os.ReadFile(p); return strings.TrimSpace(string(b)) }
	os.WriteFile(p, []byte("128\n"), 0o644)
	h := &hostSysctl{path: p, atLeast: 2048}
	r1, said, err := h.raise()
	if err != nil || read() != "2048" || !strings.Contains(said, "128 -> 2048") {
		t.Fatalf("first raise: %v, value %s, said %q", err, read(), said)
	}
	r2, said2, err := h.raise()
	if err != nil || said2 != "" {
		t.Fatalf("second raise: %v, said %q", err, said2)
	}
	r1()
	r1() // once
	if read() != "2048" {
		t.Fatalf("put back while a user remains: %s", read())
	}
	r2()
	if read() != "128" {
		t.Fatalf("after the last release: %s, want 128", read())
	}
	os.WriteFile(p, []byte("8192\n"), 0o644)
	r3, said3, err := h.raise()
	if err != nil || said3 != "" || read() != "8192" {
		t.Fatalf("already high: %v %q %s", err, said3, read())
	}
	r3()
	if read() != "8192" {
		t.Fatalf("a value not raised was changed: %s", read())
	}
}
