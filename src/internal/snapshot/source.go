package snapshot

import "sync"

// Source hands the checks of one run one snapshot, read when the first of
// them asks: the checks run at once, and those that do not need the host
// (runtime versions, sysctls) overlap the read.
type Source struct {
	once sync.Once
	read func() (*Host, error)
	h    *Host
	err  error
}

// Lazy reads the host under spec on the first Get.
func Lazy(spec Spec) *Source {
	return &Source{read: func() (*Host, error) { return Read(spec) }}
}

// From hands out a read made elsewhere (an incremental reader, a test).
func From(read func() (*Host, error)) *Source { return &Source{read: read} }

// Get returns the snapshot, reading it on the first call.
func (s *Source) Get() (*Host, error) {
	s.once.Do(func() { s.h, s.err = s.read() })
	return s.h, s.err
}
