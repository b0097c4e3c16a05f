package runtimever

import "testing"

func TestEffectiveOrigins(t *testing.T) {
	shipped, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	set, err := Effective(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Entries) != len(shipped) || len(set.Withdrawn) != 0 {
		t.Fatalf("shipped alone: %d entries, %d withdrawn; want %d, 0", len(set.Entries), len(set.Withdrawn), len(shipped))
	}
	for _, e := range set.Entries {
		if e.Origin != OriginShipped {
			t.Fatalf("%s: origin %q without operator records", e.ID, e.Origin)
		}
	}
	doc := `[
	  {"id":"CVE-2020-15257","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"},
	  {"id":"NOT-SHIPPED","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"},
	  {"id":"CVE-2024-21626","modified":"2026-12-06T00:00:00Z","summary":"site",
	   "affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.1.12"}]}]}]},
	  {"id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"site rule",
	   "affected":[{"package":{"ecosystem":"Go","name":"github.com/moby/moby"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"29.0.0"}]}]}]}]`
	op, err := Parse([]byte(doc), "test")
	if err != nil {
		t.Fatal(err)
	}
	set, err = Effective(op)
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
		t.Error("withdrawn entry listed")
	}
	if len(set.Withdrawn) != 1 || set.Withdrawn[0] != "CVE-2020-15257" {
		t.Errorf("withdrawn = %v, want [CVE-2020-15257] (an id the shipped list lacks withdraws nothing)", set.Withdrawn)
	}
	if len(set.Entries) != len(shipped)-1+1 {
		t.Errorf("%d entries, want %d", len(set.Entries), len(shipped))
	}
}
