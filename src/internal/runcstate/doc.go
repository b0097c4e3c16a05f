// Package runcstate decodes the fields of runc's state.json that the
// validator reads, and finds state files under runtime roots: containerd's
// /run/containerd/runc/<namespace>/<id>, plain runc and Garden's /run/runc/<id>,
// and any root the caller names (the CLI adds bpm's).
//
// runc writes state.json from libcontainer's State: BaseState (id,
// init_process_pid, init_process_start, created, config) plus cgroup_paths
// from the cgroup manager's GetPaths (v1: controller -> absolute directory,
// v2 and the unified half of hybrid: "" -> directory) and namespace_paths.
// It writes the file atomically, so a file that does not decode is broken,
// not half-written. An exec.fifo beside it means `runc create` ran and
// `runc start` did not yet.
package runcstate
