package runtimever

import (
	"regexp"
	"slices"
	"sync"
)

// Components probed besides Runc and Containerd (probe.go). Each prints its
// version in its own way; parseVersionOutput knows them all.
const (
	// Crun is the C OCI runtime (containers/crun): `crun --version`.
	Crun = "crun"
	// ContainerdShimRuncV2 is containerd's runc shim, one process per
	// container (or pod): `containerd-shim-runc-v2 -v` since containerd
	// 1.4. It is installed with containerd but is a binary of its own, so
	// a host can run a shim older than its daemon.
	ContainerdShimRuncV2 = "containerd-shim-runc-v2"
	// Dockerd is the Docker Engine daemon (moby/moby): `dockerd --version`.
	Dockerd = "dockerd"
)

// Components lists every component runtime-versions looks for, in report
// order.
var Components = []string{Runc, Crun, Containerd, ContainerdShimRuncV2, Dockerd}

// KnownComponent reports whether name is one of Components.
func KnownComponent(name string) bool { return slices.Contains(Components, name) }

// versionArgs is what makes component print its version.
func versionArgs(component string) []string {
	if component == ContainerdShimRuncV2 {
		// The shim's flag package knows -v only (containerd 1.4 to 2.2;
		// 2.3 added -version); --version is "flag provided but not
		// defined", exit 2.
		return []string{"-v"}
	}
	return []string{"--version"}
}

// versionFlagOptional: a component whose older releases have no version
// flag at all (containerd-shim-runc-v2 before 1.4). Its failing flag is a
// missing version, read from build info instead, not a broken binary.
func versionFlagOptional(component string) bool { return component == ContainerdShimRuncV2 }

// parseVersionOutput extracts the version and commit (or revision, or
// build) fields from the version output of component; ok is false for an
// unknown component.
func parseVersionOutput(component, out string) (version, commit string, ok bool) {
	switch component {
	case Runc:
		version, commit = ParseRuncVersion(out)
	case Containerd:
		version, commit = ParseContainerdVersion(out)
	case Crun:
		version, commit = ParseCrunVersion(out)
	case ContainerdShimRuncV2:
		version, commit = ParseShimVersion(out)
	case Dockerd:
		version, commit = ParseDockerdVersion(out)
	default:
		return "", "", false
	}
	return version, commit, true
}

var (
	crunVersionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^crun version[ \t]+(\S+)[ \t]*$`) })
	shimVersionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]+Version:[ \t]+(\S+)[ \t]*$`) })
	shimRevRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^[ \t]+Revision:[ \t]+(\S+)[ \t]*$`) })
	dockerdRe     = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?m)^Docker version ([^\s,]+)(?:, build ([^\s,]+))?[ \t]*$`)
	})
)

// ParseCrunVersion extracts version and commit from `crun --version`
// (Debian bookworm's build, testdata/crun_debian_bookworm.txt):
//
//	crun version 1.8.1
//	commit: f8a096be060b22ccd3d5f3ebe44108517fbf6c30
//	rundir: /run/crun
//	spec: 1.0.0
//	+SYSTEMD +SELINUX +APPARMOR +CAP +SECCOMP +EBPF +YAJL
func ParseCrunVersion(out string) (version, commit string) {
	return submatches(out, crunVersionRe(), runcCommitRe())
}

// ParseShimVersion extracts version and revision from
// `containerd-shim-runc-v2 -v` (containerd's runtime/v2/shim/shim.go,
// pkg/shim/shim.go from 2.0):
//
//	/usr/bin/containerd-shim-runc-v2:
//	  Version:  1.6.20~ds1
//	  Revision: 1.6.20~ds1-1+deb12u3
//	  Go version: go1.19.8
func ParseShimVersion(out string) (version, revision string) {
	return submatches(out, shimVersionRe(), shimRevRe())
}

// submatches returns the first group of a's and of b's first match in out
// ("" where one does not match).
func submatches(out string, a, b *regexp.Regexp) (string, string) {
	var got [2]string
	for i, re := range []*regexp.Regexp{a, b} {
		if m := re.FindStringSubmatch(out); m != nil {
			got[i] = m[1]
		}
	}
	return got[0], got[1]
}

// ParseDockerdVersion extracts version and build commit from
// `dockerd --version`:
//
//	Docker version 20.10.24+dfsg1, build 5d6db84
//
// Distribution packages do not print their package revision here (Debian's
// docker.io 20.10.24+dfsg1-1+deb12u1 prints the line above), so a backport
// can only be declared by this build commit.
func ParseDockerdVersion(out string) (version, build string) {
	if m := dockerdRe().FindStringSubmatch(out); m != nil {
		return m[1], m[2]
	}
	return "", ""
}
