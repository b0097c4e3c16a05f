// Package limits reads, for each running container, the resource limits
// its runtime recorded (runc's state.json, config.cgroups) and what the
// kernel has in force along the cgroup each of its processes is actually
// in. It reads over the run's snapshot (which containers run, what their
// cgroups list, where a process is) and adds only the limit files. It
// judges nothing: checks.LimitsIntact does, from Facts.
//
// What runc records and what it writes from it: opencontainers/cgroups
// config_linux.go (Resources, embedded in the Cgroup state.json keeps as
// config.cgroups), fs2/{memory,pids,cpu,io}.go (the v2 files) and
// utils.go (ConvertCPUSharesToCgroupV2Value, ConvertMemorySwapToCgroupV2Value,
// ConvertBlkIOToIOWeightValue), at commit 30a2293c; runc's
// libcontainer/specconv/spec_linux.go fills CpuWeight from the spec's
// shares (commit 76d9cf5d).
package limits
