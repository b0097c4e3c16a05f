// Package fleetsummary reads back what `bosh --json run-errand
// cellguard-validate` printed and summarizes the fleet: per instance the
// verdict (its exit code), the checks that did not pass with their finding
// counts, and one fix per check. It reads only structured output: bosh-cli's
// --json document and, in each instance's stdout, validate's JSON report
// (internal/report). Tables and human reports carry what tenants named as
// free text, so they are never read. It never runs a check.
package fleetsummary
