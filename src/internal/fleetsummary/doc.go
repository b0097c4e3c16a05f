// Package fleetsummary reads back what `bosh run-errand cellguard-validate`
// printed (bosh-cli v7.9.12's table in a terminal, its data-only table in a
// pipe or file, or --json) and summarizes the fleet: per instance the
// verdict, the checks that did not pass with their finding counts, and one
// fix per check. It reads the validator's human and JSON reports as
// internal/report writes them; it never runs a check.
package fleetsummary
