// Package checks holds the validator's checks, one file per check, and the
// one list of them (registry.go). Checks read the host under Deps.Root, never
// print and never exit; validator.Run turns their findings into a
// verdict and the report package renders it.
package checks
