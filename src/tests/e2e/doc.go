// Package e2e runs the README's `make cell` (src/tests/cell/cell.sh) end to
// end: a release tarball deployed with bosh-cli's create-env onto the real
// bosh-agent and BOSH's monit in systemd-nspawn VMs (the jammy shape by
// default, CELLGUARD_E2E_SHAPES=jammy,noble for both), Garden's containers
// made by real runc and containerd, cellguard's pre-start and drain as the
// agent runs them. It needs root; without it the test skips loudly, and in CI
// (CI=true) it fails.
package e2e
