package runtimever

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/boundedexec"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

func readFixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fakeBinary writes an executable shell script at root+path that prints
// out for --version and answers `features` only when features is non-empty.
func fakeBinary(t *testing.T, root, path, out, features string) {
	t.Helper()
	host := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--version) cat <<'CELLGUARD_EOF'\n" + out + "CELLGUARD_EOF\n;;\n"
	if features != "" {
		script += "features) cat <<'CELLGUARD_EOF'\n" + features + "\nCELLGUARD_EOF\n;;\n"
	}
	script += "*) echo \"No help topic for '$1'\" >&2; exit 3;;\nesac\n"
	testkit.WriteExec(t, host, script)
}

func TestParseRuntimeOutputs(t *testing.T) {
	testCases := []struct {
		fixture, component, version, commit, distro string
	}{
		{"runc_rc93_upstream.txt", Runc, "1.0.0-rc93", "12644e614e25b05da6fd08a38ffa0cfe1903fdec", ""},
		{"runc_rc92_dev_build.txt", Runc, "1.0.0-rc92+dev", "ff819c7e9184c13b7c2607fe6c30ae19403a7aff-dirty", ""},
		{"runc_rc6_vulnerable.txt", Runc, "1.0.0-rc6+dev", "ccb5efd37fb7c86364786e9137e22948751de7ed", ""},
		{"runc_1.1.12_docker.txt", Runc, "1.1.12", "v1.1.12-0-g51d5e94", ""},
		{"runc_empty_version_gobuild.txt", Runc, "", "", ""},
		{"runc_unknown_version.txt", Runc, "unknown", "", ""},
		{"runc_debian_bullseye_rc93.txt", Runc, "1.0.0~rc93+ds1", "1.0.0~rc93+ds1-5+deb11u2", "1.0.0~rc93+ds1-5+deb11u2"},
		{"containerd_debian_bookworm.txt", Containerd, "1.6.20~ds1", "1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u3"},
		{"containerd_docker_containerd_io.txt", Containerd, "1.7.27", "05044ec0a9a75232cad458027ca83437aae3f4da", ""},
		{"containerd_1.4.2_vulnerable.txt", Containerd, "v1.4.2", "b321d358e6eef9c82fa3f3bb8826dca3724c58c6", ""},
		{"containerd_v2.txt", Containerd, "v2.1.4", "75cb2b7193e4e490e9fbdc236c0e811ccaba3376", ""},
		{"containerd_no_ldflags.txt", Containerd, "1.6.20+unknown", "", ""},
	}
	for _, tc := range testCases {
		t.Run(tc.fixture, func(t *testing.T) {
			out := readFixture(t, tc.fixture)
			var v, c string
			if tc.component == Runc {
				v, c = ParseRuncVersion(out)
			} else {
				v, c = ParseContainerdVersion(out)
			}
			if v != tc.version || c != tc.commit {
				t.Errorf("parse = (%q, %q), want (%q, %q)", v, c, tc.version, tc.commit)
			}
			if d := DistroVersion(c); d != tc.distro {
				t.Errorf("DistroVersion(%q) = %q, want %q", c, d, tc.distro)
			}
		})
	}
}

func TestProbeFakeBinaries(t *testing.T) {
	root := t.TempDir()
	features := `{"ociVersionMin":"1.0.0","annotations":{"org.opencontainers.runc.version":"1.1.9","org.opencontainers.runc.commit":"v1.1.9-0-gccaecfcb"}}`
	fakeBinary(t, root, "/usr/bin/runc", readFixture(t, "runc_rc93_upstream.txt"), "")
	fakeBinary(t, root, "/opt/unknown/runc", readFixture(t, "runc_unknown_version.txt"), features)
	fakeBinary(t, root, "/opt/liar/runc", readFixture(t, "runc_rc92_dev_build.txt"), features)
	fakeBinary(t, root, "/usr/bin/containerd", readFixture(t, "containerd_no_ldflags.txt"), "")

	testCases := []struct {
		path, component, version, source string
		features                         bool
		note                             string
	}{
		{"/usr/bin/runc", Runc, "1.0.0-rc.93", "--version", false, ""},
		{"/opt/unknown/runc", Runc, "1.1.9", "features", true, ""},
		{"/opt/liar/runc", Runc, "1.0.0-rc.92", "--version", true, "implements `runc features`"},
		{"/usr/bin/containerd", Containerd, "1.6.20", "--version", false, "without version ldflags"},
	}
	for _, tc := range testCases {
		t.Run(tc.path, func(t *testing.T) {
			b := Binary{Component: tc.component, Path: tc.path, HostPath: filepath.Join(root, tc.path)}
			info, err := Prober{}.Probe(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			if info.VersionErr != nil {
				t.Fatalf("VersionErr: %v", info.VersionErr)
			}
			if info.Version.String() != tc.version || info.VersionSource != tc.source || info.Features != tc.features {
				t.Errorf("got %s from %s (features %v), want %s from %s (features %v)", info.Version, info.VersionSource, info.Features, tc.version, tc.source, tc.features)
			}
			if got := strings.Join(info.Notes, "; "); !strings.Contains(got, tc.note) || (tc.note == "" && got != "") {
				t.Errorf("notes %q, want one containing %q", got, tc.note)
			}
		})
	}
}

// TestProbeHangingBinary: a runtime hanging on --version must give a
// clear error, and its whole process group must be gone.
func TestProbeHangingBinary(t *testing.T) {
	root := t.TempDir()
	pidFile := filepath.Join(root, "child.pid")
	host := filepath.Join(root, "usr/bin/runc")
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	// The wrapper starts a child that would outlive it, like a shell
	// wrapper around a stuck runtime.
	script := fmt.Sprintf("#!/bin/sh\nsleep 300 &\necho $! > %s\nwait\n", pidFile)
	testkit.WriteExec(t, host, script)
	// Long enough for the script to record its child on a loaded machine.
	_, err := Prober{Timeout: 2 * time.Second}.Probe(context.Background(), Binary{Component: Runc, Path: "/usr/bin/runc", HostPath: host})
	if !errors.Is(err, boundedexec.ErrTimeout) {
		t.Fatalf("Probe of a hanging binary: err = %v, want boundedexec.ErrTimeout", err)
	}
	if !strings.Contains(err.Error(), "killed its process group") || !strings.Contains(err.Error(), "--version") {
		t.Errorf("error does not say what happened: %v", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("the script did not record its child: %v", rerr)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// SIGKILL is delivered asynchronously; wait for the child to be gone
	// or a zombie (its parent died, so init reaps it).
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d of the hung binary survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProbeParentContextCancelled(t *testing.T) {
	root := t.TempDir()
	fakeBinary(t, root, "/usr/bin/runc", readFixture(t, "runc_rc93_upstream.txt"), "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Prober{}.Probe(ctx, Binary{Component: Runc, HostPath: filepath.Join(root, "usr/bin/runc")})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestProbeRealDebianBinaries runs the runc, containerd and runc shim
// installed on this host (Debian bookworm's packages).
func TestProbeRealDebianBinaries(t *testing.T) {
	testCases := []struct {
		component, path, distroPrefix, pkg string
		features                           bool
	}{
		{Runc, "/usr/sbin/runc", "1.1.5+ds1-", "runc", true},
		{Containerd, "/usr/bin/containerd", "1.6.20~ds1-", "containerd", false},
		{ContainerdShimRuncV2, "/usr/bin/containerd-shim-runc-v2", "1.6.20~ds1-", "containerd", false},
	}
	for _, tc := range testCases {
		t.Run(tc.component, func(t *testing.T) {
			requireFile(t, tc.path)
			info, err := Prober{}.Probe(context.Background(), Binary{Component: tc.component, Path: tc.path, HostPath: tc.path})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %q -> version %s (%s), distro %q, notes %q", tc.path, info.RawVersion, info.Version, info.VersionSource, info.Distro, info.Notes)
			if info.VersionErr != nil || info.VersionSource != strings.Join(versionArgs(tc.component), " ") {
				t.Fatalf("version %v from %q", info.VersionErr, info.VersionSource)
			}
			if !strings.HasPrefix(info.Distro, tc.distroPrefix) {
				t.Errorf("distro %q, want prefix %q", info.Distro, tc.distroPrefix)
			}
			if info.Features != tc.features {
				t.Errorf("features = %v, want %v", info.Features, tc.features)
			}
			// The version the binary prints is the one dpkg installed.
			if dpkgQuery, err := exec.LookPath("dpkg-query"); err == nil {
				out, err := exec.Command(dpkgQuery, "-W", "-f=${Version}", tc.pkg).Output()
				if err == nil && string(out) != info.Distro {
					t.Errorf("binary reports package %q, dpkg has %q", info.Distro, out)
				}
			}
		})
	}
}

func requireFile(t *testing.T, path string) {
	t.Helper()
	testkit.RequireFile(t, path, "apt-get install runc containerd")
}

// TestVersionFromBuildInfoBinary builds a Go program that, like runc
// built with plain `go build`, prints no version, but whose -X ldflags
// are recorded in its build info.
func TestVersionFromBuildInfoBinary(t *testing.T) {
	goBin := goBinary()
	if _, err := os.Stat(goBin); err != nil {
		t.Skipf("SKIP: no go toolchain at %s", goBin)
	}
	dir := t.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nvar version string\n\nfunc main() { _ = version; fmt.Println(\"runc version spec: 1.0.2-dev\") }\n"
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/fakerunc\n\ngo 1.21\n"), 0o644))
	bin := filepath.Join(dir, "root", "usr", "sbin", "runc")
	cmd := exec.Command(goBin, "build", "-o", bin, "-ldflags", "-X main.version=1.0.0-rc93 -X main.gitCommit=12644e61", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	info, err := Prober{}.Probe(context.Background(), Binary{Component: Runc, HostPath: bin})
	if err != nil {
		t.Fatal(err)
	}
	if info.VersionErr != nil || info.VersionSource != "buildinfo" || info.Version.String() != "1.0.0-rc.93" {
		t.Fatalf("got %s from %q (err %v, notes %q), want 1.0.0-rc.93 from buildinfo", info.Version, info.VersionSource, info.VersionErr, info.Notes)
	}
}

func TestVersionFromBuildInfoFields(t *testing.T) {
	testCases := []struct {
		name string
		bi   debug.BuildInfo
		want string // "" = error
	}{
		{"runc ldflags", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X main.gitCommit=abc -X main.version=1.1.12"}}}, "1.1.12"},
		{"containerd ldflags", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-s -w -X github.com/containerd/containerd/version.Version=v1.6.20 -X github.com/containerd/containerd/version.Revision=2806fc10"}}}, "1.6.20"},
		{"containerd v2 ldflags", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-ldflags", Value: "-X github.com/containerd/containerd/v2/version.Version=v2.1.4"}}}, "2.1.4"},
		{"go install module@version", debug.BuildInfo{Main: debug.Module{Path: "github.com/opencontainers/runc", Version: "v1.1.12"}}, "1.1.12"},
		{"incompatible module", debug.BuildInfo{Main: debug.Module{Version: "v1.4.3+incompatible"}}, "1.4.3"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v1.1.13-0.20240201120000-abcdef123456"}}, ""},
		{"devel", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, ""},
		{"nothing (Debian build)", debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}}}, ""},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := versionFromBuildInfo(&tc.bi)
			if tc.want == "" {
				if !errors.Is(err, ErrUnknownVersion) {
					t.Fatalf("got %s, %v; want ErrUnknownVersion", v, err)
				}
				return
			}
			if err != nil || v.String() != tc.want {
				t.Fatalf("got %s, %v; want %s", v, err, tc.want)
			}
		})
	}
}

func TestLocate(t *testing.T) {
	root := t.TempDir()
	fakeBinary(t, root, "/var/vcap/packages/runc/bin/runc", "runc version 1.1.12\n", "")
	fakeBinary(t, root, "/usr/sbin/runc", "runc version 1.1.5\n", "")
	// /usr/bin/runc is a symlink to /usr/sbin/runc: one binary, not two
	must(t, os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(t, os.Symlink(filepath.Join(root, "usr/sbin/runc"), filepath.Join(root, "usr/bin/runc")))
	// not executable: not a runtime
	must(t, os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "bin/runc"), []byte("x"), 0o644))

	l := Locator{Root: root, Configured: map[string]string{Runc: "/var/vcap/packages/runc/bin/runc", Containerd: "/var/vcap/packages/containerd/bin/containerd"}}
	found, missing := l.Locate(Runc)
	var got []string
	for _, b := range found {
		got = append(got, b.Source+":"+b.Path)
	}
	want := "config:/var/vcap/packages/runc/bin/runc PATH:/usr/sbin/runc"
	if strings.Join(got, " ") != want {
		t.Errorf("Locate(runc) = %q, want %q", got, want)
	}
	if len(missing) != 0 {
		t.Errorf("missing = %v", missing)
	}
	found, missing = l.Locate(Containerd)
	if len(found) != 0 || len(missing) != 1 || missing[0].Path != "/var/vcap/packages/containerd/bin/containerd" || !errors.Is(missing[0].Err, os.ErrNotExist) {
		t.Errorf("Locate(containerd) = %v, %v; want one missing configured path", found, missing)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// goBinary is the go command: the one on PATH, else the usual toolchain place.
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}
