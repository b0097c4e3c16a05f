// Package report renders a validator run (validator.Report): a human table of
// what failed, the evidence and the fix, and JSON for tools. Prometheus
// metrics live in package metrics. It never decides a verdict;
// validator.Run did.
package report
