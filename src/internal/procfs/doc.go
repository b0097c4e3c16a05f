// Package procfs reads what the validator needs from /proc under a root
// prefix: pids, /proc/<pid>/stat (start time), cgroup, cmdline and the pid
// namespace. A process may exit between listing and reading; every read
// then returns an error matching ErrGone, which callers skip, never report.
//
// Reads go through a Reader that reuses its buffers: a cell holds thousands
// of processes and the validator runs inside BOSH's drain budget.
package procfs
