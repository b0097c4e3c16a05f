// Package topology reads, on a cgroup v2 (unified) host, how the runtime's
// cgroups are shaped and who sits where: each running container's cgroup
// and the types of it and its ancestors inside the runtime's tree, the
// cgroups of those trees that hold processes while enabling controllers
// for their children, and the cgroups the configured daemons and the BOSH
// agent run in. It judges nothing: checks.CgroupTopology does, from Facts.
//
// What the kernel allows, and why a process can sit in a cgroup whose
// cgroup.subtree_control is non-empty at all: the no-internal-process rule
// applies to domain controllers only; a cgroup enabling only threaded
// ones (cpu, cpuset, perf_event, pids) may hold processes, and the root is
// exempt (kernel/cgroup/cgroup.c cgroup_vet_subtree_control_enable and
// cgroup_migrate_vet_dst, v6.8). Such a cgroup can never enable memory or
// io for its children (EBUSY), and its processes compete with them.
package topology
