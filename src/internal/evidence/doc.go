// Package evidence holds the typed evidence a check puts in a finding
// (validator.Finding.Evidence) for another package to act on: an escaped
// process (Escape), which cgroup-integrity confirms, heal moves back and
// watch counts. Types only, and how each renders as a finding: no check
// and no action lives here.
package evidence
