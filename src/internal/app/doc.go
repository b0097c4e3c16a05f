// Package app holds cellguard's use cases: what a subcommand does between
// the flags cli reads and the exit code cli returns. A use case takes its
// side effects in (a logger, the writer people read, the clock, the
// validation it runs) and returns a typed result; it never parses flags,
// prints to stdout or exits.
package app
