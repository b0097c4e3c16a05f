// Package checks holds the validator's checks, one file each, and the one
// list of them (registry.go). A check judges facts (package facts reads
// them: Needs names the kinds, Judge turns them into findings) or the
// run's snapshot; it never prints, exits, runs a program or writes. A fact
// that could not be read makes the check an error naming it. validator.Run
// turns the findings into a verdict and the report package renders it.
package checks
