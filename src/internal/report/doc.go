// Package report renders a validator run (validator.Report): a human table of
// what failed, the evidence and the fix; JSON for tools; and a Prometheus
// textfile for node_exporter's textfile collector. It never decides a
// verdict; validator.Run did.
package report
