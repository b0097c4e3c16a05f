package render

import (
	"os"
	"syscall"
)

// WriteFile is os.WriteFile for a file a test then runs: a child forked
// by a parallel test while the file is open would inherit the writable
// descriptor until it execs, and running the file meanwhile fails with
// "text file busy" (Go issue 22315; spec/jobs TestHostileProperties once
// did). Every fork holds syscall.ForkLock for writing, so holding it for
// reading while the file is open keeps the descriptor out of every child.
// The same rule as cellguard's testkit.WriteExec, which this module cannot
// import.
func WriteFile(path string, b []byte, mode os.FileMode) error {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return os.WriteFile(path, b, mode)
}
