// Package heal moves escaped container processes back into the cgroups
// their runtime recorded (checks.Escape), verifies each move from /proc,
// and renders what it did into the report; Budget is the cap watch heals
// under (at most so many processes in any minute). `cellguard validate --fix` and `cellguard watch --heal` both
// call it after the checks have judged; it never signals or kills.
package heal
