// Package garden holds cellguard's tests against real Garden (gdn from the
// pinned guardian sources, containerd mode) in sdbox boxes: seed 000 as it
// happened, what still escapes today (jammy, Debian 12, noble), and seed 002
// (gdn killed and started again without its depot). Every container
// operation goes through Garden's API with cellguard's own client (gclient/).
//
// Cost: build.sh compiles each Garden once per content (gdn 2.5-4.5 min on
// an idle 2-core machine; 4.4 min for v1.58.0 and 8.2 min for 2020-01 at
// load 16-25), cached under /var/tmp/cellguard-garden afterwards. The boxes
// use sdbox's shared rootfs per suite (xenial, jammy and noble are built
// once, 4-20 min under load; noble 233 s here). Each scenario boots its own box: 40-200 s, plus Garden's
// own two minutes in the unprotected seed-000 case. TestTodayOnNoble boots
// two boxes and runs seed 002 in the second: 78-113 s at load 20-60.
// They need root; without it they skip loudly, and in CI (CI=true) they fail.
package garden
