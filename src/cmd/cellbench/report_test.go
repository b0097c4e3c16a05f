package main

import (
	"slices"
	"testing"
)

// validate --phase drain follows its JSON report on stderr with the drain's
// decision; the escapes are read from the report alone.
func TestReportEscapesBeforeTheDrainLine(t *testing.T) {
	stderr := []byte(`{"results": [{"id": "cgroup-integrity", "findings": [
  {"status": "fail", "data": {"pid": "10024", "hierarchy": "memory", "expected": "/garden/c1", "actual": "/system.slice/garden.service"}},
  {"status": "pass", "data": {}}]}]}
cellguard validate --phase drain: blocked: blocking findings on an update (job_changed): drain prints no integer, so the agent fails this step
`)
	got, err := reportEscapes(stderr)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10024 memory /garden/c1 /system.slice/garden.service"}; !slices.Equal(got, want) {
		t.Fatalf("escapes %q, want %q", got, want)
	}
}
