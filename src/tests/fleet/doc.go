// Package fleet drives cellguard on a real BOSH director (src/tests/director)
// with the nspawn CPI's VMs on the director's lab network: a deployment with
// an instance group "cell" (three instances with test-release's garden job)
// and "other" (no garden), cellguard placed by a runtime config only where
// the garden job is, `update: {canaries: 1, max_in_flight: 1}`.
//
// Scenarios are Go values (scenario.go) that own their steps and the
// expectations each step records: one list, checked once at the end. A
// scenario whose step failed or whose expectations were not all recorded
// fails; it never counts as ok. TestFleet is make cell and part of make
// test (jammy and xenial; make cell adds noble): it needs
// root, the director's dependencies (make deps) and a stemcell, and without
// them it skips loudly, and in CI (CI=true) it fails.
//
// CELLGUARD_FLEET_SCENARIOS=garden (garden_test.go) swaps the stand-in for
// real Garden (src/tests/bosh/garden-release) and runs its own scenario;
// garden-seed (garden_seed000_test.go, xenial) does the same with Garden of
// 2020-01 started by monit: seed 000 as it happened. "all" (make cell) is
// the default scenarios, then each shape's own real Garden. Unset, TestFleet
// runs the default scenarios only (make test; README.md).
package fleet
