// Package bpfiter runs BPF iterators (Linux 5.8+) once each, to read from
// the kernel in one pass what /proc gives one process at a time: loading a
// program against the running kernel's BTF, running it to its end, and
// the field offsets it needs. Procs is every process's stat fields; package
// netns has the open-file iterators. Callers fall back to /proc when an
// iterator cannot run (no BTF, an older kernel, no CAP_BPF or CAP_PERFMON,
// not the initial pid namespace).
package bpfiter
