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
// Every scenario is a subtest, TestFleet/<shape>/<scenario>, in lanes
// (lanes_test.go: fleetLanes, the one table); pick reads go test's -run and
// -skip before anything is brought up, so `-run TestFleet/jammy/watch_heals`
// makes jammy's director, the releases and that lane's VMs alone. make cell's
// extra shape (noble) and real Garden lanes (garden, garden_seed000*: the
// stand-in swapped for src/tests/bosh/garden-release) run with
// CELLGUARD_FLEET_SCENARIOS=all or a -run that names their level.
package fleet
