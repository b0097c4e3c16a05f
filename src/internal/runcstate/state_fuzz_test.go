package runcstate

import (
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fuzzseed"
)

// FuzzDecode: state.json under a runtime root, as runc of any version left
// it (or as a crash half-wrote it). Decoding must never panic, and the pid
// namespace answers must agree.
func FuzzDecode(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/*.json") {
		f.Add(b)
		f.Add(b[:len(b)/2]) // a torn write
	}
	f.Add([]byte(`{"id":"c1","init_process_pid":42,"init_process_start":"12345","config":{"namespaces":[{"type":"NEWPID","path":"/proc/1/ns/pid"}]}}`))
	f.Add([]byte(`{"init_process_start":null,"cgroup_paths":{"":"/sys/fs/cgroup/garden/c1"}}`))
	f.Add([]byte(`{"init_process_start":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Decode(b)
		if err != nil {
			return
		}
		if s.NewPidNS() && !s.HasPidNS() {
			t.Fatalf("NewPidNS without HasPidNS for %q", b)
		}
	})
}
