// Package garden runs real Garden (gdn, in containerd mode) inside an sdbox
// and drives every container operation through Garden's API, with
// cellguard's own client (src/tests/garden/gclient): create from a raw
// rootfs, run a process, list, destroy. No ctr or runc shortcut: what a test
// sees is what Garden's callers (Diego's rep, Concourse) would see.
//
// Garden comes from src/tests/garden/build.sh (the pinned guardian sources in
// ../shared/sources, cached by content under /var/tmp/cellguard-garden); the
// box gets the host's containerd, its shims and runc, patched to load the
// host's glibc, so one runtime serves Debian and Ubuntu boxes alike.
//
// What it takes to run gdn in a box on these machines is measured, not
// guessed (../shared/garden/README.md): unprivileged containers (the
// machine's bounding set lacks CAP_SYS_RESOURCE), a uid map that leaves
// container root's mapping alone, a raw rootfs owned by container root's host
// uid, --external-ip and a default route for Garden's iptables rules, and a
// /proc/cgroups that does not list controllers the host never mounted.
//
// Only test code imports this package.
package garden
