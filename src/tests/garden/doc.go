// Package garden holds cellguard's tests against real Garden (gdn from the
// pinned guardian sources, containerd mode) in sdbox boxes: seed 000 as it
// happened, and what still escapes today. Every container operation goes
// through Garden's API with cellguard's own client (gclient/).
//
// Cost: build.sh compiles each Garden once per content (gdn 2.5-4.5 min on
// an idle 2-core machine; 4.4 min for v1.58.0 and 8.2 min for 2020-01 at
// load 16-25), cached under /var/tmp/cellguard-garden afterwards. The boxes
// use sdbox's shared rootfs per suite (xenial and jammy are built once, 10-20
// min under load). Each scenario boots its own box: 40-200 s, plus Garden's
// own two minutes in the unprotected seed-000 case.
// They need root; without it they skip loudly, and in CI (CI=true) they fail.
package garden
