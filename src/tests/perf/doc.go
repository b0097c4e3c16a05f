// Package perf holds benchmarks that need a real systemd (booted by
// testkit/sdbox): start/stop latency of a monit-managed daemon through
// cellguard, systemctl and its ctl script, and the idempotent pre-start.
// They report times and never assert them; they need root and skip loudly
// without it. `make bench` runs them; docs/performance.md has the results.
package perf
