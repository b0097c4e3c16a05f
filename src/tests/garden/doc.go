// Package garden holds cellguard's tests against real Garden (gdn from the
// pinned guardian sources, containerd mode) in sdbox boxes: seed 000 as it
// happened, and what still escapes today. Every container operation goes
// through Garden's API with cellguard's own client (gclient/).
//
// Cost: build.sh compiles each Garden once per content (gdn 2.5-4.5 min on a
// 2-core machine, cached under /var/tmp/cellguard-garden afterwards); a box
// with iptables is built once per suite (about a minute; xenial's longer).
// They need root; without it they skip loudly, and in CI (CI=true) they fail.
package garden
