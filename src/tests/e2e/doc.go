// Package e2e runs the README's `make cell` (src/tests/cell/cell.sh) end to
// end: a release tarball, BOSH-like cells on a real systemd, Garden's
// containers made by real runc, and cellguard's pre-start and drain. It needs
// root; without it the test skips loudly, and in CI (CI=true) it fails.
package e2e
