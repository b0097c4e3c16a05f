package runtimever

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEffectiveOrigins(t *testing.T) {
	shipped, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	set, err := Effective("", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Entries) != len(shipped) || len(set.Disabled) != 0 {
		t.Fatalf("shipped alone: %d entries, %d disabled; want %d, 0", len(set.Entries), len(set.Disabled), len(shipped))
	}
	for _, e := range set.Entries {
		if e.Origin != OriginShipped {
			t.Fatalf("%s: origin %q without an operator file", e.ID, e.Origin)
		}
	}

	root := t.TempDir()
	doc := `{"schema":1,"advisories":[
	  {"id":"CVE-2020-15257","disabled":true},
	  {"id":"NOT-SHIPPED","disabled":true},
	  {"id":"CVE-2024-21626","component":"runc","summary":"site","references":["https://example.org"],
	   "affected":[{"introduced":"0","fixed":"1.1.12"}],"severity":{"pre-start":"warning"}},
	  {"id":"SITE-1","component":"dockerd","summary":"site rule","references":["https://example.org/1"],
	   "affected":[{"introduced":"0","fixed":"29.0.0"}]}]}`
	must(t, os.WriteFile(filepath.Join(root, "a.json"), []byte(doc), 0o644))
	set, err = Effective(root, "/a.json")
	if err != nil {
		t.Fatal(err)
	}
	origins := map[string]string{}
	for _, e := range set.Entries {
		origins[e.ID] = e.Origin
	}
	for id, want := range map[string]string{"CVE-2024-21626": OriginReplaced, "SITE-1": OriginAdded, "CVE-2019-5736": OriginShipped} {
		if origins[id] != want {
			t.Errorf("%s: origin %q, want %q", id, origins[id], want)
		}
	}
	if _, ok := origins["CVE-2020-15257"]; ok {
		t.Error("disabled entry listed")
	}
	if len(set.Disabled) != 1 || set.Disabled[0] != "CVE-2020-15257" {
		t.Errorf("disabled = %v, want [CVE-2020-15257] (an id the shipped list lacks disables nothing)", set.Disabled)
	}
	if len(set.Entries) != len(shipped)-1+1 {
		t.Errorf("%d entries, want %d", len(set.Entries), len(shipped))
	}
	if _, err := Effective(root, "/missing.json"); err == nil {
		t.Error("missing file: no error")
	}
}
