// Package validator is the validator's framework: what a check is (Check,
// Meta), what it returns (Finding, Result, Report), the operator's policy
// over a run (Policy: ignored checks, per-phase blocking lists, each id
// checked against the registry) and how a run turns findings into a
// verdict (Run). The checks themselves live in internal/checks, one file
// each, listed in one registry; they never print and never exit. Rendering
// a report is internal/report's.
package validator
