package checks

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/cgroup"
	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// rvFake writes an executable script at root+path that prints out for
// --version and fails any other subcommand (like runc < 1.1 on features).
func rvFake(t *testing.T, root, path, out string) {
	t.Helper()
	host := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then cat <<'EOF'\n" + out + "\nEOF\nexit 0; fi\necho \"No help topic for '$1'\" >&2\nexit 3\n"
	testkit.WriteExec(t, host, script)
}

func rvSysctl(t *testing.T, root, pipeSoft string) {
	t.Helper()
	dir := filepath.Join(root, "proc/sys/fs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pipe-user-pages-soft"), []byte(pipeSoft+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rvByAdvisory indexes findings by their advisory id; "" collects the
// per-binary summaries and skips.
func rvByAdvisory(fs []validator.Finding) map[string][]validator.Finding {
	out := map[string][]validator.Finding{}
	for _, f := range fs {
		out[f.Data["advisory"]] = append(out[f.Data["advisory"]], f)
	}
	return out
}

func TestRuntimeVersionsMeta(t *testing.T) {
	if err := validator.Validate([]validator.Check{bound{RuntimeVersions{}, nil}, bound{SystemdCgroupMode{}, nil}}); err != nil {
		t.Fatal(err)
	}
}

// TestRuntimeVersionsRC93Hang: the rc93 hang is a hazard; it blocks
// pre-start only while the pipe soft limit is active; otherwise, and at
// drain, it warns.
func TestRuntimeVersionsRC93Hang(t *testing.T) {
	testCases := []struct {
		name, pipeSoft string
		phase          validator.Phase
		want           validator.Status
		holds          string
	}{
		{"limit active, pre-start", "16384", validator.PreStart, validator.Fail, "true"},
		{"limit off, pre-start", "0", validator.PreStart, validator.Warn, "false"},
		{"limit active, drain", "16384", validator.Drain, validator.Warn, "true"},
		{"limit unreadable, pre-start", "", validator.PreStart, validator.Fail, "true"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rvFake(t, root, "/var/vcap/packages/runc/bin/runc", rc93Version)
			if tc.pipeSoft != "" {
				rvSysctl(t, root, tc.pipeSoft)
			}
			c := &runtimeCase{Root: root, Phase: tc.phase, Path: []string{},
				Binaries: map[string]string{"runc": "/var/vcap/packages/runc/bin/runc"}}
			fs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			hang := rvByAdvisory(fs)["runc-rc93-init-hang"]
			if len(hang) != 1 {
				t.Fatalf("want one runc-rc93-init-hang finding, got %+v", fs)
			}
			f := hang[0]
			if f.Status != tc.want || f.Data["condition_holds"] != tc.holds || f.Data["class"] != "hazard" {
				t.Errorf("status %s (condition holds %s, class %s), want %s (%s, hazard): %s", f.Status, f.Data["condition_holds"], f.Data["class"], tc.want, tc.holds, f.Detail)
			}
			for _, s := range []string{"runc-rc93-init-hang", "1.0.0-rc93", "1.0.0-rc94", "/var/vcap/packages/runc/bin/runc", "hazard"} {
				if !strings.Contains(f.Detail, s) {
					t.Errorf("detail lacks %q: %s", s, f.Detail)
				}
			}
			if f.Data["fixed_in"] != "1.0.0-rc94" || f.Data["version"] != "1.0.0-rc93" {
				t.Errorf("data %v", f.Data)
			}
			// containerd is neither configured nor on the (empty) PATH
			if sk := rvByAdvisory(fs)[""]; !containsStatus(sk, "containerd", validator.Skip) {
				t.Errorf("no Skip for the absent containerd: %+v", sk)
			}
		})
	}
}

const rc93Version = "runc version 1.0.0-rc93\ncommit: 12644e614e25b05da6fd08a38ffa0cfe1903fdec\nspec: 1.0.2-dev"

// TestRuntimeVersionsClasses: hazards block pre-start where their
// conditions hold on this host (a sysctl, the cgroup layout); security
// advisories warn unless the operator promotes their id; the run blocks
// exactly when a finding does.
func TestRuntimeVersionsClasses(t *testing.T) {
	const rc90 = "runc version 1.0.0-rc90\ncommit: 2b18fe1d885ee5083ef9f0838fee39b62d653e30\nspec: 1.0.2-dev"
	const v140 = "runc version 1.4.0\ncommit: v1.4.0-0-g8bd78a99\nspec: 1.3.0\ngo: go1.24.11\nlibseccomp: 2.5.6"
	testCases := []struct {
		name, version, pipeSoft string
		mode                    cgroup.Mode
		phase                   validator.Phase
		promoted                []string
		want                    map[string]validator.Status // advisory -> status; every other match must warn
		blocked                 bool
	}{
		{"rc93 with the pipe limit lowered blocks", rc93Version, "1024", cgroup.Hybrid, validator.PreStart, nil,
			map[string]validator.Status{"runc-rc93-init-hang": validator.Fail, "CVE-2024-21626": validator.Warn}, true},
		{"rc93 with the profile's pipe limit (0) does not", rc93Version, "0", cgroup.Hybrid, validator.PreStart, nil,
			map[string]validator.Status{"runc-rc93-init-hang": validator.Warn, "CVE-2021-30465": validator.Warn}, false},
		{"a promoted CVE blocks", rc93Version, "0", cgroup.Hybrid, validator.PreStart, []string{"CVE-2024-21626"},
			map[string]validator.Status{"runc-rc93-init-hang": validator.Warn, "CVE-2024-21626": validator.Fail}, true},
		{"a promoted CVE warns at drain", rc93Version, "0", cgroup.Hybrid, validator.Drain, []string{"CVE-2024-21626"},
			map[string]validator.Status{"CVE-2024-21626": validator.Warn, "runc-rc93-init-hang": validator.Warn, "CVE-2021-30465": validator.Pass}, false},
		{"rc90's devices deny-all on cgroup v1 blocks", rc90, "0", cgroup.Legacy, validator.PreStart, nil,
			map[string]validator.Status{"runc-devices-update-deny-all": validator.Fail}, true},
		{"rc90's devices deny-all on cgroup v2 does not", rc90, "0", cgroup.Unified, validator.PreStart, nil,
			map[string]validator.Status{"runc-devices-update-deny-all": validator.Warn}, false},
		{"1.4.0's exec on cgroup v2 blocks", v140, "0", cgroup.Unified, validator.PreStart, nil,
			map[string]validator.Status{"runc-exec-cgroup-fallback": validator.Fail, "CVE-2026-41579": validator.Warn}, true},
		{"1.4.0's exec on a hybrid host does not", v140, "0", cgroup.Hybrid, validator.PreStart, nil,
			map[string]validator.Status{"runc-exec-cgroup-fallback": validator.Warn}, false},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			rvFake(t, root, "/var/vcap/packages/runc/bin/runc", tc.version)
			rvSysctl(t, root, tc.pipeSoft)
			c := &runtimeCase{Root: root, Phase: tc.phase, Path: []string{}, Promoted: tc.promoted, Mode: tc.mode,
				Binaries: map[string]string{"runc": "/var/vcap/packages/runc/bin/runc"}}
			fs, err := c.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for id, f := range rvByAdvisory(fs) {
				if id == "" {
					continue
				}
				want, ok := tc.want[id]
				if !ok {
					want = validator.Warn
					if tc.phase == validator.Drain {
						want = validator.Pass // info
					}
				}
				if f[0].Status != want {
					t.Errorf("%s (%s): %s, want %s: %s", id, f[0].Data["class"], f[0].Status, want, f[0].Detail)
				}
				delete(tc.want, id)
			}
			if len(tc.want) != 0 {
				t.Errorf("not reported: %v\n%s", tc.want, rvDescribe(fs))
			}
			rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: tc.phase})
			if rep.Blocked != tc.blocked {
				t.Errorf("blocked = %v, want %v", rep.Blocked, tc.blocked)
			}
		})
	}
}

// TestRuntimeVersionsOperatorRecords: an operator's OSV record replaces a
// shipped one of its id (here making a CVE a hazard), and one of its own
// is matched like the shipped ones.
func TestRuntimeVersionsOperatorRecords(t *testing.T) {
	root := t.TempDir()
	rvFake(t, root, "/usr/bin/containerd", "containerd github.com/containerd/containerd v1.4.2 b321d358e6eef9c82fa3f3bb8826dca3724c58c6")
	var op []runtimever.Advisory
	for _, doc := range []string{
		`{"id":"CVE-2020-15257","modified":"2026-12-06T00:00:00Z","summary":"the site treats it as a hazard",
		  "affected":[{"package":{"ecosystem":"Go","name":"github.com/containerd/containerd"},
		    "ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.3.9"},{"introduced":"1.4.0-alpha"},{"fixed":"1.4.3"}]}]}],
		  "references":[{"type":"ADVISORY","url":"https://github.com/containerd/containerd/security/advisories/GHSA-36xw-fx78-c5r4"}],
		  "database_specific":{"cellguard":{"class":"hazard","impact":"escape"}}}`,
		`{"id":"SITE-2026-1","modified":"2026-12-06T00:00:00Z","summary":"site: containerd 1.4 leaks shims on our cells",
		  "affected":[{"package":{"ecosystem":"Go","name":"github.com/containerd/containerd"},
		    "ranges":[{"type":"ECOSYSTEM","events":[{"introduced":"1.4.0"},{"last_affected":"1.4.13"}]}]}]}`,
	} {
		a, err := runtimever.ParseRecord([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		op = append(op, a)
	}
	for _, tc := range []struct {
		name string
		op   []runtimever.Advisory
		want map[string]validator.Status
	}{
		{"shipped alone", nil, map[string]validator.Status{"CVE-2020-15257": validator.Warn}},
		{"with the operator's records", op, map[string]validator.Status{"CVE-2020-15257": validator.Fail, "SITE-2026-1": validator.Warn}},
	} {
		c := &runtimeCase{Root: root, Path: []string{"/usr/bin"}, Advisories: tc.op}
		fs, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		by := rvByAdvisory(fs)
		for id, want := range tc.want {
			if f := by[id]; len(f) != 1 || f[0].Status != want {
				t.Errorf("%s: %s findings %+v, want one %s", tc.name, id, f, want)
			}
		}
		if f := by["SITE-2026-1"]; tc.op != nil && (len(f) != 1 || !strings.Contains(f[0].Detail, "leaks shims")) {
			t.Errorf("%s: operator's record not matched: %+v", tc.name, f)
		}
	}
}

func containsStatus(fs []validator.Finding, subject string, st validator.Status) bool {
	for _, f := range fs {
		if f.Subject == subject && f.Status == st {
			return true
		}
	}
	return false
}

func TestRuntimeVersionsBinariesMissingOrBroken(t *testing.T) {
	root := t.TempDir()
	rvFake(t, root, "/usr/bin/runc", "runc version unknown\nspec: 1.0.2-dev")
	// a containerd that hangs on --version
	hang := filepath.Join(root, "usr/bin/containerd")
	testkit.WriteExec(t, hang, "#!/bin/sh\nexec sleep 300\n")
	// The timeout is the hang's whole cost, and a fake that answers must
	// answer within it on a loaded machine: at 200 ms the runc script here
	// was once timed out too (beside make cell, load ~20).
	c := &runtimeCase{Root: root, Path: []string{"/usr/bin"}, Prober: runtimever.Prober{Timeout: 3 * time.Second},
		Binaries: map[string]string{"runc": "/var/vcap/packages/runc/bin/runc"}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]validator.Status{
		"/var/vcap/packages/runc/bin/runc": validator.Error, // configured, absent: an error
		"/usr/bin/runc":                    validator.Warn,  // version unknown
		// hangs: its version is unknown, which warns (a loaded cell, or a
		// TCG guest, answers late; that is not an unsafe runtime) and says
		// which property gives it longer
		"/usr/bin/containerd": validator.Warn,
	}
	got := map[string]validator.Status{}
	for _, f := range fs {
		got[f.Subject] = f.Status
		if f.Subject == "/usr/bin/containerd" {
			for _, w := range []string{"no answer within 3s", "version unknown", "validator.probe_timeout"} {
				if !strings.Contains(f.Detail, w) {
					t.Errorf("hang detail lacks %q: %s", w, f.Detail)
				}
			}
			if f.Data["probe"] != "timed out" {
				t.Errorf("hang data: %v, want probe=timed out", f.Data)
			}
		}
	}
	for s, st := range want {
		if got[s] != st {
			t.Errorf("%s: %s, want %s (all: %v)", s, got[s], st, got)
		}
	}
}

// A runc that prints its version but hangs on `runc features` (the
// second exec of its probe) is still judged by that version: a hazard it
// carries blocks, and the late answer is its own warning, not "version
// unknown".
func TestRuntimeVersionsFeaturesTimeoutKeepsTheVersion(t *testing.T) {
	root := t.TempDir()
	host := filepath.Join(root, "usr/bin/runc")
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		t.Fatal(err)
	}
	testkit.WriteExec(t, host, "#!/bin/sh\ncase \"$1\" in\n--version) printf 'runc version 1.0.0-rc93\\nspec: 1.0.2-dev\\n'; exit 0;;\nfeatures) exec sleep 300;;\nesac\nexit 3\n")
	rvSysctl(t, root, "16384")
	c := &runtimeCase{Root: root, Path: []string{"/usr/bin"}, Prober: runtimever.Prober{Timeout: 2 * time.Second}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var hazard, late bool
	for _, f := range fs {
		if f.Subject != "/usr/bin/runc" {
			continue
		}
		t.Logf("%s %s", f.Status, f.Detail)
		hazard = hazard || (f.Status == validator.Fail && strings.Contains(f.Detail, "1.0.0-rc93"))
		late = late || (f.Status == validator.Warn && strings.Contains(f.Detail, "no answer within 2s") && !strings.Contains(f.Detail, "version unknown"))
	}
	if !hazard || !late {
		t.Errorf("rc93 whose features hang: hazard judged %v, late answer warned %v; want both", hazard, late)
	}
}

// TestRuntimeVersionsRealDebianHost runs the check on this host's real
// runc, containerd and runc shim, whatever their versions, and judges the
// findings against the advisory table: each binary is probed again on its
// own, every advisory the table matches must be a finding with the status
// its severity gives (a carried backport passes), no other advisory may
// be, and pre-start blocks exactly when one of them is blocking. For the
// Debian bookworm builds whose changelogs were read, the verdicts are also
// pinned by id: the backports (runc CVE-2024-21626; containerd
// CVE-2024-25621, -40635, CVE-2025-64329) are recognised, November 2025's
// runc CVEs and containerd's CVE-2026-53488 warn (security advisories:
// pre-start is not blocked by them) and block once promoted.
func TestRuntimeVersionsRealDebianHost(t *testing.T) {
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/containerd"} {
		testkit.RequireFile(t, p, "apt-get install runc containerd")
	}
	c := &runtimeCase{Root: "/", Path: []string{"/usr/sbin", "/usr/bin"}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("findings:\n%s", rvDescribe(fs))
	advs, err := runtimever.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]validator.Status{} // advisory id -> status, from the table
	blocking := false
	for _, comp := range runtimever.Components {
		found, _ := runtimever.Locator{Root: "/", Path: []string{"/usr/sbin", "/usr/bin"}}.Locate(comp)
		for _, b := range found {
			info, err := runtimever.Prober{}.Probe(context.Background(), b)
			if err != nil || info.VersionErr != nil {
				t.Fatalf("probe %s: %v %v", b.HostPath, err, info.VersionErr)
			}
			for _, a := range advs {
				switch v, _ := a.Match(comp, info.Version, info.Distro, info.Commit); v {
				case runtimever.Backported:
					want[a.ID] = validator.Pass
				case runtimever.Affected:
					sev := validator.Severity(a.SeverityIn(runtimever.PreStart, false))
					if len(a.Conditions) > 0 {
						want[a.ID] = "" // the condition decides; checked by TestRuntimeVersionsRC93Hang
						continue
					}
					want[a.ID] = advisoryStatus(sev)
					blocking = blocking || sev == validator.Blocking
				}
			}
		}
	}
	by := rvByAdvisory(fs)
	for id, st := range want {
		f := by[id]
		if len(f) == 0 {
			t.Errorf("%s: the table matches this host's binary, the check reported nothing", id)
		} else if st != "" && f[0].Status != st {
			t.Errorf("%s: status %s, the table's severity gives %s", id, f[0].Status, st)
		}
	}
	var ids []string
	for id, f := range by {
		if id == "" {
			continue
		}
		if _, ok := want[id]; !ok {
			t.Errorf("%s: reported (%s), but the table does not match this host's binaries", id, f[0].Status)
		}
		ids = append(ids, id+"="+string(f[0].Status))
	}
	sort.Strings(ids)
	for _, p := range []struct {
		phase   validator.Phase
		blocked bool
	}{{validator.PreStart, blocking}, {validator.Drain, false}} {
		c.Phase = p.phase
		rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: p.phase})
		if rep.Blocked != p.blocked {
			t.Errorf("%s: blocked = %v, want %v (%s)", p.phase, rep.Blocked, p.blocked, rep.Results[0].Status)
		}
	}

	runcOut, _ := exec.Command("/usr/sbin/runc", "--version").Output()
	ctdOut, _ := exec.Command("/usr/bin/containerd", "--version").Output()
	if !strings.Contains(string(runcOut), "commit: 1.1.5+ds1-1+deb12u1") || !strings.Contains(string(ctdOut), "1.6.20~ds1-1+deb12u3") {
		t.Logf("no pinned verdicts for runc %q / containerd %q: judged by the table alone", runcOut, ctdOut)
		return
	}
	pinned := "CVE-2024-21626=pass CVE-2024-25621=pass CVE-2024-40635=pass CVE-2024-45310=warn CVE-2025-31133=warn CVE-2025-52565=warn " +
		"CVE-2025-52881=warn CVE-2025-64329=pass CVE-2026-41579=warn CVE-2026-46680=warn CVE-2026-47262=warn CVE-2026-53488=warn " +
		"GHSA-7ww5-4wqc-m92c=warn runc-systemd-unit-exists=warn"
	if got := strings.Join(ids, " "); got != pinned {
		t.Errorf("advisories:\n got %s\nwant %s", got, pinned)
	}
	// promoted, a security advisory blocks pre-start on the same binaries
	c.Promoted, c.Phase = []string{"CVE-2025-31133"}, validator.PreStart
	if rep := validator.Run(context.Background(), []validator.Check{c}, validator.Options{Phase: validator.PreStart}); !rep.Blocked {
		t.Error("CVE-2025-31133 promoted: pre-start not blocked")
	}
	if b := by["CVE-2024-21626"][0].Data["backport"]; b != ">=1.1.5+ds1-1+deb12u1" {
		t.Errorf("CVE-2024-21626 backport evidence %q", b)
	}
	var summaries []string
	for _, f := range by[""] {
		summaries = append(summaries, f.Detail)
	}
	joined := strings.Join(summaries, "\n")
	for _, want := range []string{
		"containerd 1.6.20~ds1 (package 1.6.20~ds1-1+deb12u3) at /usr/bin/containerd (PATH, version from --version): 4 advisories",
		"containerd-shim-runc-v2 1.6.20~ds1 (package 1.6.20~ds1-1+deb12u3) at /usr/bin/containerd-shim-runc-v2 (PATH, version from -v): no known advisory",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("summary %q missing:\n%s", want, joined)
		}
	}
}

func rvDescribe(fs []validator.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(string(f.Status) + " " + f.Subject + ": " + f.Detail + "\n")
	}
	return b.String()
}

// TestRuntimeVersionsOtherComponents: crun, the runc shim and dockerd are
// probed where found, silently skipped where absent, and an unknown
// configured component is a warning, not ignored.
func TestRuntimeVersionsOtherComponents(t *testing.T) {
	root := t.TempDir()
	shim := filepath.Join(root, "usr/bin/containerd-shim-runc-v2")
	if err := os.MkdirAll(filepath.Dir(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	// the shim answers -v only, as containerd's does
	script := "#!/bin/sh\n[ \"$1\" = -v ] || exit 2\nprintf 'containerd-shim-runc-v2:\\n  Version:  v1.4.2\\n  Revision: b321d358e6eef9c82fa3f3bb8826dca3724c58c6\\n'\n"
	testkit.WriteExec(t, shim, script)
	rvFake(t, root, "/usr/sbin/dockerd", "Docker version 20.10.6, build 370c289")
	c := &runtimeCase{Root: root, Path: []string{"/usr/bin", "/usr/sbin"},
		Binaries: map[string]string{"runcc": "/usr/bin/runc"}}
	fs, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	by := rvByAdvisory(fs)
	for id, want := range map[string]validator.Status{
		"CVE-2020-15257@containerd-shim-runc-v2": validator.Warn,
		"dockerd-v3-file-capabilities":           validator.Warn,
		"CVE-2021-41091":                         validator.Warn,
	} {
		if f := by[id]; len(f) != 1 || f[0].Status != want {
			t.Errorf("%s: %+v, want one %s", id, f, want)
		}
	}
	if f := by["dockerd-v3-file-capabilities"]; len(f) == 1 && (f[0].Data["class"] != "security" || f[0].Data["impact"] != "malfunction") {
		t.Errorf("class, impact = %q, %q; want security, malfunction", f[0].Data["class"], f[0].Data["impact"])
	}
	var absent, unknown []string
	for _, f := range by[""] {
		if f.Status == validator.Skip {
			absent = append(absent, f.Subject)
		}
		if f.Status == validator.Warn && f.Subject == "runcc" {
			unknown = append(unknown, f.Detail)
		}
	}
	sort.Strings(absent)
	if got := strings.Join(absent, " "); got != "containerd runc" {
		t.Errorf("skips for absent components: %q, want only containerd and runc (crun is optional)", got)
	}
	if len(unknown) != 1 || !strings.Contains(unknown[0], "not a runtime cellguard probes") {
		t.Errorf("unknown component runcc: %q", unknown)
	}
}

// TestRuntimeVersionsCrunLibkrun: CVE-2025-24965 is in crun's krun
// handler; promoted, it blocks only a crun built with libkrun (+LIBKRUN in
// its --version), and is otherwise a warning.
func TestRuntimeVersionsCrunLibkrun(t *testing.T) {
	for _, tc := range []struct {
		features string
		want     validator.Status
		holds    string
	}{
		{"+SYSTEMD +SELINUX +APPARMOR +CAP +SECCOMP +EBPF +YAJL", validator.Warn, "false"},
		{"+SYSTEMD +SELINUX +APPARMOR +CAP +SECCOMP +EBPF +CRIU +LIBKRUN +YAJL", validator.Fail, "true"},
	} {
		root := t.TempDir()
		rvFake(t, root, "/usr/bin/crun", "crun version 1.19.1\ncommit: 3e32a70c93f5aa5fea69b50256cca7fd4aa23c80\nrundir: /run/crun\nspec: 1.0.0\n"+tc.features)
		c := &runtimeCase{Root: root, Path: []string{"/usr/bin"}, Promoted: []string{"CVE-2025-24965"}}
		fs, err := c.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		f := rvByAdvisory(fs)["CVE-2025-24965"]
		if len(f) != 1 || f[0].Status != tc.want || f[0].Data["condition_holds"] != tc.holds {
			t.Errorf("%s: %+v, want %s with condition_holds=%s", tc.features, f, tc.want, tc.holds)
		}
	}
}
