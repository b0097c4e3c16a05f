// Package boundedexec runs other programs so that none can hang cellguard:
// every run is bounded by a context or a timeout, and what outlives it is
// killed. A program runs from the file safefile.OpenTrusted checked,
// through its descriptor, never by its path (Command). Output is for
// probes (runc, containerd, systemctl --version): its own process group,
// killed whole, a fixed environment. Run is for a daemon's ctl script run
// without systemd: the caller's command, only its own process killed.
package boundedexec
