// Package snapshot reads the host once into an immutable value that the
// validator's checks judge: the cgroup layout, the runtime states, what
// each container's cgroups list, and every process's stat (Read). Reading
// one process again later, to confirm a suspect, is its own step
// (Rereader), so a check's decision runs in a test on a fake.
//
// It reads and never decides: what counts as an escape is package checks',
// what is done about it package heal's.
package snapshot
