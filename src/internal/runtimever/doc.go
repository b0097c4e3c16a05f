// Package runtimever finds the container runtimes on a host (runc, crun,
// containerd, containerd-shim-runc-v2 and dockerd, at configured paths and
// on PATH under a root prefix), reads their versions without ever hanging
// (every exec is time-bounded and its process group killed on timeout),
// compares versions the way runtime releases and distributions spell them,
// and matches them against advisories in OSV's format (the shipped
// advisories.json and the operator's records, one format), each a hazard
// or a security advisory (database_specific.cellguard.class).
//
// What belongs here: probing binaries, version arithmetic, advisory data.
// What does not: deciding what blocks a rollout; that is the
// runtime-versions check in internal/checks.
package runtimever
