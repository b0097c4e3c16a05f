package runtimever

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// TestParseComponentOutputs: the version outputs of crun, dockerd and the
// runc shim as Debian bookworm's builds print them (testdata, captured from
// the packages' binaries), and the forms of upstream builds from the
// print statements of their sources.
func TestParseComponentOutputs(t *testing.T) {
	testCases := []struct {
		name, component, out, version, commit, distro string
	}{
		{"crun_debian_bookworm.txt", Crun, readFixture(t, "crun_debian_bookworm.txt"), "1.8.1", "f8a096be060b22ccd3d5f3ebe44108517fbf6c30", ""},
		{"dockerd_debian_bookworm.txt", Dockerd, readFixture(t, "dockerd_debian_bookworm.txt"), "20.10.24+dfsg1", "5d6db84", ""},
		{"containerd_shim_runc_v2_debian_bookworm.txt", ContainerdShimRuncV2, readFixture(t, "containerd_shim_runc_v2_debian_bookworm.txt"),
			"1.6.20~ds1", "1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u3"},
		// containerd 1.7+ prints the base name and its own version string
		{"shim upstream", ContainerdShimRuncV2, "containerd-shim-runc-v2:\n  Version:  v2.1.4\n  Revision: 75cb2b7193e4e490e9fbdc236c0e811ccaba3376\n  Go version: go1.23.12\n\n",
			"v2.1.4", "75cb2b7193e4e490e9fbdc236c0e811ccaba3376", ""},
		{"dockerd without build", Dockerd, "Docker version 29.7.2\n", "29.7.2", "", ""},
		{"crun version empty", Crun, "crun version \ncommit: abc\n", "", "abc", ""},
		{"not dockerd", Dockerd, "dockerd: unknown flag --version\n", "", "", ""},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v, c, ok := parseVersionOutput(tc.component, tc.out)
			if !ok || v != tc.version || c != tc.commit {
				t.Fatalf("parse = %q, %q, %v; want %q, %q", v, c, ok, tc.version, tc.commit)
			}
			if d := DistroVersion(c); d != tc.distro {
				t.Errorf("distro %q, want %q", d, tc.distro)
			}
		})
	}
	if _, _, ok := parseVersionOutput("kubelet", "Kubernetes v1.30.0"); ok {
		t.Error("an unknown component parsed")
	}
}

// flagBinary writes an executable at root+path that prints out when called
// with exactly flag and fails like Go's flag package otherwise.
func flagBinary(t *testing.T, root, path, flag, out string) string {
	t.Helper()
	host := filepath.Join(root, path)
	must(t, os.MkdirAll(filepath.Dir(host), 0o755))
	script := "#!/bin/sh\nif [ \"$1\" = '" + flag + "' ]; then cat <<'CELLGUARD_EOF'\n" + out + "CELLGUARD_EOF\nexit 0; fi\n" +
		"echo \"flag provided but not defined: $1\" >&2\nexit 2\n"
	testkit.WriteExec(t, host, script)
	return host
}

// TestProbeComponents runs fakes that answer only the flag each real
// component answers: the shim -v, the others --version.
func TestProbeComponents(t *testing.T) {
	root := t.TempDir()
	testCases := []struct {
		component, path, flag, out, version, source, distro string
	}{
		{Crun, "/usr/bin/crun", "--version", readFixture(t, "crun_debian_bookworm.txt"), "1.8.1", "--version", ""},
		{Dockerd, "/usr/sbin/dockerd", "--version", readFixture(t, "dockerd_debian_bookworm.txt"), "20.10.24", "--version", ""},
		{ContainerdShimRuncV2, "/usr/bin/containerd-shim-runc-v2", "-v", readFixture(t, "containerd_shim_runc_v2_debian_bookworm.txt"), "1.6.20", "-v", "1.6.20~ds1-1+deb12u3"},
	}
	for _, tc := range testCases {
		t.Run(tc.component, func(t *testing.T) {
			host := flagBinary(t, root, tc.path, tc.flag, tc.out)
			info, err := Prober{}.Probe(context.Background(), Binary{Component: tc.component, Path: tc.path, HostPath: host})
			if err != nil {
				t.Fatal(err)
			}
			if info.VersionErr != nil || info.Version.String() != tc.version || info.VersionSource != tc.source || info.Distro != tc.distro {
				t.Errorf("got %s from %q (distro %q, err %v), want %s from %q (distro %q)",
					info.Version, info.VersionSource, info.Distro, info.VersionErr, tc.version, tc.source, tc.distro)
			}
		})
	}
}

// TestProbeShimWithoutVersionFlag: containerd-shim-runc-v2 before 1.4 has
// no -v. That is a version to find elsewhere (build info), not a broken
// binary; a runc refusing --version still is.
func TestProbeShimWithoutVersionFlag(t *testing.T) {
	root := t.TempDir()
	shim := flagBinary(t, root, "/usr/bin/containerd-shim-runc-v2", "-address", "")
	info, err := Prober{}.Probe(context.Background(), Binary{Component: ContainerdShimRuncV2, HostPath: shim})
	if err != nil {
		t.Fatalf("Probe: %v, want a version error only", err)
	}
	if info.VersionErr == nil || !strings.Contains(info.VersionErr.Error(), "-v") {
		t.Errorf("VersionErr = %v, want one naming the -v run", info.VersionErr)
	}
	if len(info.Notes) == 0 || !strings.Contains(info.Notes[0], "build info") {
		t.Errorf("notes %q: want the build info attempt", info.Notes)
	}
	runc := flagBinary(t, root, "/usr/sbin/runc", "-v", "")
	if _, err := (Prober{}).Probe(context.Background(), Binary{Component: Runc, HostPath: runc}); err == nil {
		t.Error("a runc that refuses --version probed without error")
	}
}

// TestLocateComponents: the new components are found on the search path
// like runc and containerd.
func TestLocateComponents(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"/usr/bin/crun", "/usr/bin/containerd-shim-runc-v2", "/usr/sbin/dockerd"} {
		flagBinary(t, root, p, "--version", "x\n")
	}
	l := Locator{Root: root}
	for comp, want := range map[string]string{Crun: "/usr/bin/crun", ContainerdShimRuncV2: "/usr/bin/containerd-shim-runc-v2", Dockerd: "/usr/sbin/dockerd"} {
		found, missing := l.Locate(comp)
		if len(found) != 1 || found[0].Path != want || len(missing) != 0 {
			t.Errorf("Locate(%s) = %+v, %+v; want %s", comp, found, missing, want)
		}
	}
}
