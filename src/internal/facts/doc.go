// Package facts reads the host into plain data for the validator's checks:
// the read phase of "facts, then judgement, then action". Each kind of fact
// (the host snapshot, systemd, units over D-Bus, runtime binaries, sysctls,
// leaked network namespaces) has one provider with its own deadline, and
// each fact that could not be read carries its error, so a judge says
// "could not judge" naming it instead of passing silently.
//
// A Host reads a kind once, on the first Wait for it (or at once for the
// needs given to Read), so a run reads only what its checks declare and a
// check left out of a run (watch's event scans) triggers no read. Checks in
// package checks only judge what a Host holds; nothing here judges.
//
// The providers that touch other processes are opt-in: leaked-netns's
// socket probe (pidfd_getfd, BPF task_file iterator, joining a holder's
// cgroups) runs only with Spec.NetnsProbe (validator.netns_probe).
package facts
