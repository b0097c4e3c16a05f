// Package integration holds cellguard's end-to-end tests against a real
// systemd (booted as PID 1 in a systemd-nspawn container by
// src/tests/harness/sdbox.sh) and real monit. They need root; without it they
// skip loudly, and in CI (CI=true) they fail instead.
package integration
