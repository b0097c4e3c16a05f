// Package cgroup reads and writes the cgroup filesystems under a root
// prefix: which mode the host runs (v1, hybrid, v2), where each hierarchy is
// mounted, what /proc/<pid>/cgroup says about a process, who is in a cgroup
// (cgroup.procs), and moving a process into a cgroup for --fix.
//
// It assumes the standard layout below /sys/fs/cgroup that systemd, BOSH
// stemcells and Garden use: one directory per v1 hierarchy named by its
// controllers ("cpu,cpuacct", "systemd" for name=systemd), and "unified" for
// the v2 hierarchy of a hybrid host. That keeps every function usable on
// fixture trees, where there is no mount table to ask.
package cgroup
