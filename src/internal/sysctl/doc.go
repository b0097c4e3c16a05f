// Package sysctl owns cellguard's container-host kernel parameters: the
// built-in profile (each value with why and a source), resolving it with
// the operator's Settings (cli fills them from the job config and flags),
// applying it (persist to sysctl.d, write live, read back)
// and checking it (live values, and which sysctl.d file wins at boot,
// following systemd-sysctl's rules). Each entry is exact or a floor
// (ModeAtLeast): capacity limits are floors that apply raises but never
// lowers, live or at boot (see Host.Apply for what the file then holds).
//
// What belongs here: key names and their /proc/sys paths, value
// validation, the sysctl.d precedence model. What does not: the job's
// config schema, flag parsing and output (internal/cli), logging (callers log the returned reports),
// the validator's check wrapper (it calls Check).
//
// Everything takes a root prefix so tests run on fixture trees; the live
// kernel is reached through the Live interface so a test can make a fake
// kernel reject a value with EINVAL.
package sysctl
