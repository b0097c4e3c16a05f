package runtimever

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestShippedAdvisories(t *testing.T) {
	advs, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, a := range advs {
		ids[a.ID] = true
		for _, r := range a.References {
			if !strings.HasPrefix(r, "https://") {
				t.Errorf("%s: reference %q is not a URL", a.ID, r)
			}
		}
	}
	// the entries issues 4 and 15 require
	for _, id := range []string{"runc-rc93-init-hang", "runc-devices-update-deny-all", "CVE-2019-5736", "CVE-2024-21626",
		"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "runc-systemd-unit-exists", "CVE-2020-15257",
		"CVE-2019-16884", "CVE-2019-19921", "CVE-2021-30465", "CVE-2022-29162", "CVE-2023-25809", "CVE-2023-27561",
		"CVE-2023-28642", "CVE-2024-45310", "CVE-2021-32760", "CVE-2021-41103", "CVE-2021-43816", "CVE-2022-23648",
		"CVE-2022-31030", "CVE-2022-23471", "CVE-2023-25153", "CVE-2023-25173", "CVE-2024-40635", "CVE-2025-47290",
		"dockerd-v3-file-capabilities"} {
		if !ids[id] {
			t.Errorf("shipped advisories lack %s", id)
		}
	}
}

// matchIDs returns the ids of shipped advisories of component that match.
func matchIDs(t *testing.T, component, version, distro, commit string) (affected, backported []string) {
	t.Helper()
	advs, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	v := MustParse(version)
	for _, a := range advs {
		switch verdict, _ := a.Match(component, v, distro, commit); verdict {
		case Affected:
			affected = append(affected, a.ID)
		case Backported:
			backported = append(backported, a.ID)
		}
	}
	sort.Strings(affected)
	sort.Strings(backported)
	return affected, backported
}

func TestMatchShipped(t *testing.T) {
	// every runc advisory of the November 2025 round and after
	const nov2025 = "CVE-2025-31133 CVE-2025-52565 CVE-2025-52881 CVE-2026-41579"
	// what every containerd before 1.6.26 still has, whatever its series
	const ctdLate = "CVE-2024-25621 CVE-2024-40635 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-53488"
	// what every containerd before 1.5.11 and 1.6.1 still has
	const ctd2022 = "CVE-2022-23471 CVE-2022-23648 CVE-2022-24769 CVE-2022-31030 CVE-2023-25153 CVE-2023-25173"
	testCases := []struct {
		name, component, version, distro, commit string
		affected, backported                     string
	}{
		{"rc6 is vulnerable to everything old", Runc, "1.0.0-rc6+dev", "", "",
			"CVE-2019-16884 CVE-2019-19921 CVE-2019-5736 CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-45310 " + nov2025 + " runc-devices-update-deny-all runc-systemd-unit-exists", ""},
		{"rc7 fixes CVE-2019-5736", Runc, "1.0.0-rc7", "", "",
			"CVE-2019-16884 CVE-2019-19921 CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-45310 " + nov2025 + " runc-devices-update-deny-all runc-systemd-unit-exists", ""},
		{"rc92+dev is before the rc93 hang and the rc93 fd leak", Runc, "1.0.0-rc92+dev", "", "",
			"CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"rc93 hangs and leaks the cgroup fd", Runc, "1.0.0-rc93", "", "",
			"CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-rc93-init-hang runc-systemd-unit-exists", ""},
		{"rc94 does not hang", Runc, "1.0.0-rc94", "", "",
			"CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"rc95 fixes the mount race and regresses /proc checks", Runc, "1.0.0-rc95", "", "",
			"CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2023-27561 CVE-2023-28642 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"1.0.0 final is after every rc", Runc, "1.0.0", "", "",
			"CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2023-27561 CVE-2023-28642 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"Debian bullseye rc93 spelled ~rc93", Runc, "1.0.0~rc93+ds1", "1.0.0~rc93+ds1-5+deb11u2", "1.0.0~rc93+ds1-5+deb11u2",
			"CVE-2021-30465 CVE-2021-43784 CVE-2022-29162 CVE-2023-25809 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-rc93-init-hang runc-systemd-unit-exists", ""},
		{"1.1.4 predates the 1.1.5 round", Runc, "1.1.4", "", "",
			"CVE-2023-25809 CVE-2023-27561 CVE-2023-28642 CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"upstream 1.1.5", Runc, "1.1.5", "", "",
			"CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"Debian bookworm 1.1.5 carries the CVE-2024-21626 fix", Runc, "1.1.5+ds1", "1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1+deb12u1",
			"CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", "CVE-2024-21626"},
		{"a later bookworm security upload too", Runc, "1.1.5+ds1", "1.1.5+ds1-1+deb12u2", "",
			"CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", "CVE-2024-21626"},
		{"the bookworm upload before the fix does not", Runc, "1.1.5+ds1", "1.1.5+ds1-1", "",
			"CVE-2024-21626 CVE-2024-45310 " + nov2025 + " runc-systemd-unit-exists", ""},
		{"1.1.12", Runc, "1.1.12", "", "v1.1.12-0-g51d5e94", "CVE-2024-45310 " + nov2025, ""},
		{"1.1.14", Runc, "1.1.14", "", "", nov2025, ""},
		{"1.2.0-rc.2 is in the 1.2 pre-release range of CVE-2024-45310", Runc, "1.2.0-rc.2", "", "", "CVE-2024-45310 " + nov2025, ""},
		{"1.2.0-rc.3", Runc, "1.2.0-rc.3", "", "", nov2025, ""},
		{"1.2.8 fixes November 2025", Runc, "1.2.8", "", "", "CVE-2026-41579", ""},
		{"1.3.2 is in the 1.3 affected range", Runc, "1.3.2", "", "", nov2025, ""},
		{"1.3.3", Runc, "1.3.3", "", "", "CVE-2026-41579", ""},
		{"1.4.0-rc.2", Runc, "1.4.0-rc.2", "", "", nov2025 + " runc-exec-cgroup-fallback", ""},
		{"1.4.0-rc.3", Runc, "1.4.0-rc.3", "", "", "CVE-2026-41579 runc-exec-cgroup-fallback", ""},
		{"1.4.0 lost exec's fallback", Runc, "1.4.0", "", "", "CVE-2026-41579 runc-exec-cgroup-fallback", ""},
		{"1.4.1 restored it", Runc, "1.4.1", "", "", "CVE-2026-41579", ""},
		{"1.5.0-rc.1 never lost it", Runc, "1.5.0-rc.1", "", "", "CVE-2026-41579", ""},
		{"1.4.3", Runc, "1.4.3", "", "", "", ""},
		{"1.5.0", Runc, "1.5.0", "", "", "", ""},

		{"containerd 1.2.13", Containerd, "1.2.13", "", "",
			"CVE-2020-15157 CVE-2020-15257 CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.4.2", Containerd, "v1.4.2", "", "",
			"CVE-2020-15257 CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.3.8", Containerd, "1.3.8", "", "",
			"CVE-2020-15257 CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.3.9 fixes CVE-2020-15257", Containerd, "1.3.9", "", "",
			"CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		// and the 1.4.4 one: CVE-2021-21334 was in 1.3, so in 1.4's betas too
		{"containerd 1.4.0-beta.2 predates the 1.4.3 fix", Containerd, "1.4.0-beta.2", "", "",
			"CVE-2020-15257 CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		// issue 15: these three reported nothing before
		{"containerd 1.4.3", Containerd, "1.4.3", "", "",
			"CVE-2021-21334 CVE-2021-32760 CVE-2021-41103 " + ctd2022 + " " + ctdLate + " GHSA-5j5w-g665-5m35 GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.5.9", Containerd, "1.5.9", "", "",
			ctd2022 + " " + ctdLate + " GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.6.0", Containerd, "1.6.0", "", "",
			ctd2022 + " " + ctdLate + " GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.5.8 is before the SELinux relabel fix", Containerd, "1.5.8", "", "",
			"CVE-2021-43816 " + ctd2022 + " " + ctdLate + " GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.6.18", Containerd, "1.6.18", "", "", ctdLate + " GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 1.6.38, the last 1.6", Containerd, "1.6.38", "", "",
			"CVE-2024-25621 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-53488", ""},
		{"Debian containerd 1.6.20 carries three backports", Containerd, "1.6.20~ds1", "1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u3",
			"CVE-2026-46680 CVE-2026-47262 CVE-2026-53488 GHSA-7ww5-4wqc-m92c", "CVE-2024-25621 CVE-2024-40635 CVE-2025-64329"},
		{"Debian's deb12u2 lacks the Attach fix", Containerd, "1.6.20~ds1", "1.6.20~ds1-1+deb12u2", "1.6.20~ds1-1+deb12u2",
			"CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-53488 GHSA-7ww5-4wqc-m92c", "CVE-2024-25621 CVE-2024-40635"},
		{"containerd.io 1.7.27", Containerd, "1.7.27", "", "05044ec0a9a75232cad458027ca83437aae3f4da",
			"CVE-2024-25621 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-53488", ""},
		{"containerd 2.1.0 has the unpack race", Containerd, "2.1.0", "", "",
			"CVE-2024-25621 CVE-2025-47290 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		// issue 23: a series' pre-releases are built toward its X.Y.0 and
		// carry what it carries; ranges starting at X.Y.0 used to skip them.
		{"containerd 2.1.0-beta.0 too, and what 2.1.0 has", Containerd, "2.1.0-beta.0", "", "",
			"CVE-2024-25621 CVE-2025-47290 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.1.0-rc.1", Containerd, "2.1.0-rc.1", "", "",
			"CVE-2024-25621 CVE-2025-47290 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.2.0-beta.0 predates the November 2025 fixes", Containerd, "2.2.0-beta.0", "", "",
			"CVE-2024-25621 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.2.0-rc.1, the last 2.2 pre-release, too", Containerd, "v2.2.0-rc.1", "", "",
			"CVE-2024-25621 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.0.0-rc.4", Containerd, "2.0.0-rc.4", "", "",
			"CVE-2024-25621 CVE-2024-40635 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-53488", ""},
		{"containerd 1.7.0-beta.0", Containerd, "1.7.0-beta.0", "", "",
			ctdLate + " GHSA-7ww5-4wqc-m92c", ""},
		{"containerd 2.3.0-rc.0", Containerd, "2.3.0-rc.0", "", "",
			"CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"dockerd 23.0.0-rc.1", Dockerd, "23.0.0-rc.1", "", "",
			"CVE-2023-28840 CVE-2023-28841 CVE-2023-28842 CVE-2024-24557 CVE-2024-29018 CVE-2024-41110 CVE-2025-54410 CVE-2026-33997 CVE-2026-34040 CVE-2026-42306 GHSA-jq35-85cj-fj4p GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r", ""},
		{"containerd 2.1.4", Containerd, "v2.1.4", "", "",
			"CVE-2024-25621 CVE-2025-64329 CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.0.9 has no checkpoint-restore advisories", Containerd, "2.0.9", "", "", "CVE-2026-47262 CVE-2026-53488", ""},
		{"containerd 2.2.0 ships the November 2025 fixes", Containerd, "2.2.0", "", "",
			"CVE-2026-46680 CVE-2026-47262 CVE-2026-50195 CVE-2026-53488 CVE-2026-53489 CVE-2026-53492", ""},
		{"containerd 2.3.2", Containerd, "2.3.2", "", "", "", ""},

		{"shim 1.4.2", ContainerdShimRuncV2, "v1.4.2", "", "", "CVE-2020-15257@containerd-shim-runc-v2", ""},
		{"Debian shim 1.6.20", ContainerdShimRuncV2, "1.6.20~ds1", "1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u3", "", ""},

		{"Debian crun 1.8.1", Crun, "1.8.1", "", "f8a096be060b22ccd3d5f3ebe44108517fbf6c30", "CVE-2025-24965 CVE-2026-47766", ""},
		{"crun 1.4.3", Crun, "1.4.3", "", "", "CVE-2022-27650 CVE-2025-24965 CVE-2026-47766", ""},
		{"crun 1.19", Crun, "1.19", "", "", "CVE-2025-24965 CVE-2026-30892 CVE-2026-47766", ""},
		{"crun 1.27.1", Crun, "1.27.1", "", "", "CVE-2026-47766", ""},
		{"crun 1.29.1", Crun, "1.29.1", "", "", "", ""},

		{"seed 003's dockerd 20.10.6", Dockerd, "20.10.6", "", "",
			"CVE-2021-41089 CVE-2021-41091 CVE-2022-24769@dockerd CVE-2022-36109 CVE-2023-28840 CVE-2023-28841 CVE-2023-28842 CVE-2024-24557 CVE-2024-29018 CVE-2024-41110 CVE-2025-54410 CVE-2026-33997 CVE-2026-34040 CVE-2026-42306 GHSA-jq35-85cj-fj4p GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r GHSA-xmmx-7jpf-fx42 dockerd-v3-file-capabilities", ""},
		{"Debian docker.io 20.10.24: 20.10 never got the 2024 fixes", Dockerd, "20.10.24+dfsg1", "", "5d6db84",
			"CVE-2024-24557 CVE-2024-29018 CVE-2024-41110 CVE-2025-54410 CVE-2026-33997 CVE-2026-34040 CVE-2026-42306 GHSA-jq35-85cj-fj4p GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r", ""},
		{"dockerd 24.0.9 never got the internal-DNS fix", Dockerd, "24.0.9", "", "",
			"CVE-2024-29018 CVE-2024-41110 CVE-2025-54410 CVE-2026-33997 CVE-2026-34040 CVE-2026-42306 GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r", ""},
		{"dockerd 28.3.2", Dockerd, "28.3.2", "", "",
			"CVE-2025-54388 CVE-2026-33997 CVE-2026-34040 CVE-2026-42306 GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r", ""},
		{"dockerd 29.3.1", Dockerd, "29.3.1", "", "", "CVE-2026-42306 GHSA-vp62-88p7-qqf5 GHSA-x86f-5xw2-fm2r", ""},
		{"dockerd 29.5.1", Dockerd, "29.5.1", "", "", "", ""},
		{"dockerd 25.0.17", Dockerd, "25.0.17", "", "", "", ""},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			aff, back := matchIDs(t, tc.component, tc.version, tc.distro, tc.commit)
			if strings.Join(aff, " ") != tc.affected {
				t.Errorf("affected = %q\nwant       %q", strings.Join(aff, " "), tc.affected)
			}
			if strings.Join(back, " ") != tc.backported {
				t.Errorf("backported = %q, want %q", strings.Join(back, " "), tc.backported)
			}
		})
	}
}

// realDebianRunc pins what the data says for Debian builds of runc whose
// changelogs were read: 1.1.5+ds1-1+deb12u1 carries the CVE-2024-21626 fix,
// nothing for 1.1.14's CVE-2024-45310 or November 2025, nor the 1.1.6
// UnitExists fix. Any other build is judged by the table alone.
var realDebianRunc = map[string]struct{ affected, backported string }{
	"1.1.5+ds1-1+deb12u1": {"CVE-2024-45310 CVE-2025-31133 CVE-2025-52565 CVE-2025-52881 CVE-2026-41579 runc-systemd-unit-exists", "CVE-2024-21626"},
}

// TestMatchRealDebianRunc judges the runc installed here, whatever its
// version, against the advisory table: the probe must read the version
// dpkg installed, every verdict must agree with the entry's own ranges and
// backports, and a build pinned above must get exactly its verdicts.
func TestMatchRealDebianRunc(t *testing.T) {
	requireFile(t, "/usr/sbin/runc")
	info, err := Prober{}.Probe(context.Background(), Binary{Component: Runc, Path: "/usr/sbin/runc", HostPath: "/usr/sbin/runc"})
	if err != nil || info.VersionErr != nil {
		t.Fatal(err, info.VersionErr)
	}
	if out, err := exec.Command("dpkg-query", "-S", "/usr/sbin/runc").Output(); err == nil {
		pkg, _, _ := strings.Cut(string(out), ":")
		ver, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
		if err != nil || string(ver) != info.Distro {
			t.Fatalf("probe read package version %q, dpkg has %q (%v)", info.Distro, ver, err)
		}
	}
	aff, back := matchIDs(t, Runc, info.Version.Raw, info.Distro, info.Commit)
	t.Logf("runc %s (package %q): affected %v, backported %v", info.Version.Raw, info.Distro, aff, back)
	advs, err := Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range advs {
		inRange := false
		for _, r := range a.Ranges(Runc) {
			lo, hi := Version{Major: -1}, Version{Major: 1 << 30}
			if r.Introduced != "0" {
				lo = MustParse(r.Introduced)
				if len(lo.Pre) == 0 { // a release's pre-releases are in its range
					lo.Pre = []string{"0"}
				}
			}
			if r.Fixed != "" {
				hi = MustParse(r.Fixed)
			}
			inRange = inRange || (!info.Version.Less(lo) && info.Version.Less(hi))
		}
		carried := false
		for _, b := range a.Backports {
			carried = carried || b == info.Distro || b == info.Commit ||
				strings.HasPrefix(b, ">=") && info.Distro != "" && CompareDpkg(info.Distro, strings.TrimPrefix(b, ">=")) >= 0 &&
					strings.SplitN(strings.TrimPrefix(b, ">="), "-", 2)[0] == strings.SplitN(info.Distro, "-", 2)[0]
		}
		want := "not affected"
		if inRange && carried {
			want = "backported"
		} else if inRange {
			want = "affected"
		}
		got := "not affected"
		if slices.Contains(aff, a.ID) {
			got = "affected"
		} else if slices.Contains(back, a.ID) {
			got = "backported"
		}
		if got != want {
			t.Errorf("%s: matched %s, its ranges %+v and backports %v say %s", a.ID, got, a.Ranges(Runc), a.Backports, want)
		}
	}
	if pin, ok := realDebianRunc[info.Distro]; ok {
		if got := strings.Join(aff, " "); got != pin.affected {
			t.Errorf("affected = %q, want %q", got, pin.affected)
		}
		if got := strings.Join(back, " "); got != pin.backported {
			t.Errorf("backported = %q, want %q", got, pin.backported)
		}
	} else {
		t.Logf("no pinned expectation for package %q: judged by the table alone", info.Distro)
	}
}

func TestMatchExactBackportAndCommit(t *testing.T) {
	a := Advisory{ID: "X", Packages: []Package{{Component: Runc, Ranges: []Range{{Introduced: "0", Fixed: "1.0.0-rc7"}}}},
		Backports: []string{"1.0.0~rc6+dfsg1-3", "09c8266bf2fcf9519a651b04ae54c967b9ab86ec"}}
	v := MustParse("1.0.0-rc6+dev")
	testCases := []struct {
		distro, commit string
		want           Verdict
	}{
		{"1.0.0~rc6+dfsg1-3", "", Backported},
		{"1.0.0~rc6+dfsg1-4", "", Affected}, // exact entries do not extend to later revisions
		{"", "09c8266bf2fcf9519a651b04ae54c967b9ab86ec", Backported},
		{"", "ccb5efd37fb7c86364786e9137e22948751de7ed", Affected},
	}
	for _, tc := range testCases {
		if got, _ := a.Match(Runc, v, tc.distro, tc.commit); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.distro, tc.commit, got, tc.want)
		}
	}
	// ">=" needs the same upstream version: a different upstream is judged
	// by the ranges alone.
	b := Advisory{ID: "Y", Packages: []Package{{Component: Runc, Ranges: []Range{{Introduced: "0", Fixed: "1.1.12"}}}}, Backports: []string{">=1.1.5+ds1-1+deb12u1"}}
	if got, _ := b.Match(Runc, MustParse("1.1.6"), "1.1.6+ds1-1", ""); got != Affected {
		t.Errorf("other upstream 1.1.6+ds1-1 = %v, want Affected", got)
	}
}

// osvRecord is a valid record with fields replaced: a test changes one
// thing at a time.
func osvRecord(over string) string {
	base := `"schema_version":"1.6.0","id":"X","modified":"2026-12-06T00:00:00Z","summary":"s","references":[{"type":"WEB","url":"https://x"}]`
	if !strings.Contains(over, `"affected"`) {
		base += `,"affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.1.12"}]}]}]`
	}
	if over != "" {
		base += "," + over
	}
	return "{" + strings.Replace(base, `"id":"X","modified":"2026-12-06T00:00:00Z",`, "", strings.Count(over, `"modified"`)) + "}"
}

func affected(ranges string) string {
	return `"affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[` + ranges + `]}]`
}

func TestParseRecordRefusesBadData(t *testing.T) {
	testCases := []struct{ name, doc, want string }{
		{"unknown field", osvRecord(`"afected":[]`), "unknown field"},
		{"not an object", `[1]`, "OSV record"},
		{"no modified", `{"id":"X","summary":"s","affected":[]}`, "modified"},
		{"no id", `{"modified":"2026-12-06T00:00:00Z"}`, "id is required"},
		{"unknown condition", osvRecord(`"database_specific":{"cellguard":{"class":"hazard","conditions":["pipe_soft_limit"]}}`), "unknown condition"},
		{"unknown class", osvRecord(`"database_specific":{"cellguard":{"class":"breakout"}}`), "class"},
		{"unknown cellguard key", osvRecord(`"database_specific":{"cellguard":{"klass":"hazard"}}`), "unknown field"},
		{"only other packages", osvRecord(`"affected":[{"package":{"ecosystem":"Go","name":"k8s.io/kubernetes"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]`), "no package cellguard probes"},
		{"no package", osvRecord(`"affected":[{"ranges":[]}]`), "ecosystem and name"},
		{"inverted range", osvRecord(affected(`{"type":"SEMVER","events":[{"introduced":"1.2.0"},{"fixed":"1.1.0"}]}`)), "not below"},
		{"bad version", osvRecord(affected(`{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"one"}]}`)), "fixed"},
		{"fixed first", osvRecord(affected(`{"type":"SEMVER","events":[{"fixed":"1.1.0"}]}`)), "without an introduced"},
		{"limit", osvRecord(affected(`{"type":"SEMVER","events":[{"introduced":"0"},{"limit":"1.1.0"}]}`)), "limit"},
		{"two keys in an event", osvRecord(affected(`{"type":"SEMVER","events":[{"introduced":"0","fixed":"1.1.0"}]}`)), "exactly one"},
		{"unknown range type", osvRecord(affected(`{"type":"SEMVERS","events":[{"introduced":"0"}]}`)), "type"},
		{"only GIT ranges", osvRecord(affected(`{"type":"GIT","repo":"https://github.com/opencontainers/runc","events":[{"introduced":"0"}]}`)), "nothing to compare"},
		{"unknown binary", osvRecord(`"affected":[{"package":{"ecosystem":"Go","name":"github.com/containerd/containerd"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}],"database_specific":{"cellguard":{"binaries":["shim"]}}}]`), "binaries"},
		{"no text", `{"id":"X","modified":"2026-12-06T00:00:00Z","affected":[]}`, "summary or details"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRecord([]byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if _, err := Parse([]byte(`[`+osvRecord("")+`,`+osvRecord("")+`]`), "test"); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate ids: %v", err)
	}
}

// TestParseRecordFromAnExport: a record as osv.dev serves GHSA's, with its
// own database_specific and a GIT range beside the SEMVER one, parses as a
// security advisory of runc.
func TestParseRecordFromAnExport(t *testing.T) {
	doc := `{"schema_version":"1.6.0","id":"GHSA-xr7r-f8xq-vfvv","modified":"2024-11-20T05:39:23Z","published":"2024-01-31T22:44:10Z",
	  "aliases":["CVE-2024-21626"],"summary":"runc vulnerable to container breakout through process.cwd trickery and leaked fds",
	  "details":"long text","severity":[{"type":"CVSS_V3","score":"CVSS:3.1/AV:L/AC:H/PR:N/UI:R/S:C/C:H/I:H/A:H"}],
	  "affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc","purl":"pkg:golang/github.com/opencontainers/runc"},
	    "ranges":[{"type":"SEMVER","events":[{"introduced":"1.0.0-rc93"},{"fixed":"1.1.12"}]},
	              {"type":"GIT","repo":"https://github.com/opencontainers/runc","events":[{"introduced":"0"},{"fixed":"02120488a4c0fc487d1ed2867e901eeed7ce8ecf"}]}],
	    "database_specific":{"source":"https://github.com/github/advisory-database/blob/main/advisories/github-reviewed/2024/01/GHSA-xr7r-f8xq-vfvv/GHSA-xr7r-f8xq-vfvv.json"}}],
	  "references":[{"type":"ADVISORY","url":"https://github.com/opencontainers/runc/security/advisories/GHSA-xr7r-f8xq-vfvv"}],
	  "database_specific":{"cwe_ids":["CWE-403"],"github_reviewed":true,"severity":"HIGH"}}`
	a, err := ParseRecord([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if a.Class != ClassSecurity || len(a.Packages) != 1 || a.Packages[0].Component != Runc {
		t.Fatalf("parsed %+v", a)
	}
	for v, want := range map[string]Verdict{"1.0.0-rc92": NotAffected, "1.0.0-rc93": Affected, "1.1.11": Affected, "1.1.12": NotAffected} {
		if got, _ := a.Match(Runc, MustParse(v), "", ""); got != want {
			t.Errorf("%s: %v, want %v", v, got, want)
		}
	}
}

// TestRangeForms: last_affected is inclusive, listed versions match
// exactly, a fix given as a Go pseudo-version is below the next tag.
func TestRangeForms(t *testing.T) {
	a, err := ParseRecord([]byte(osvRecord(`"affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},
	  "ranges":[{"type":"SEMVER","events":[{"introduced":"1.2.0"},{"last_affected":"1.2.3"},{"introduced":"0"},{"fixed":"1.0.0-rc9.0.20191211201523-3291d66b9844"}]}],
	  "versions":["1.3.5"]}]`)))
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]Verdict{"1.2.3": Affected, "1.2.4": NotAffected, "1.3.5": Affected, "1.3.4": NotAffected,
		"1.0.0-rc9": Affected, "1.0.0-rc10": NotAffected} {
		if got, _ := a.Match(Runc, MustParse(v), "", ""); got != want {
			t.Errorf("%s: %v, want %v", v, got, want)
		}
	}
}

func TestLoadMergesOperatorRecords(t *testing.T) {
	var op []Advisory
	for _, doc := range []string{
		`{"id":"CVE-2020-15257","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"}`,
		`{"id":"CVE-2024-21626","modified":"2026-12-06T00:00:00Z","summary":"override",` + affected(`{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"1.1.12"}]}`) +
			`,"database_specific":{"cellguard":{"backports":["1.1.5+ds1-1+deb12u1"]}}}`,
		`{"id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"site rule","affected":[{"package":{"ecosystem":"Go","name":"github.com/containerd/containerd"},
		  "ranges":[{"type":"ECOSYSTEM","events":[{"introduced":"1.6.0"},{"fixed":"1.6.21"}]}]}],"database_specific":{"cellguard":{"class":"hazard"}}}`,
	} {
		a, err := ParseRecord([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		op = append(op, a)
	}
	advs, err := Load(op)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Advisory{}
	for _, a := range advs {
		byID[a.ID] = a
	}
	if _, ok := byID["CVE-2020-15257"]; ok {
		t.Error("withdrawn entry still present")
	}
	if a := byID["CVE-2024-21626"]; a.Summary != "override" || a.SeverityIn(PreStart, false) != SeverityWarning {
		t.Errorf("override not applied: %+v", a)
	}
	if a := byID["SITE-1"]; a.SeverityIn(PreStart, false) != SeverityBlocking || a.SeverityIn(Drain, false) != SeverityWarning {
		t.Errorf("added hazard: %+v", a)
	}
	if _, ok := byID["CVE-2019-5736"]; !ok {
		t.Error("shipped entries lost")
	}
}

func TestPipeSoftLimit(t *testing.T) {
	root := t.TempDir()
	if _, err := PipeSoftLimit(root); err == nil {
		t.Error("missing file: no error")
	}
	must(t, os.MkdirAll(filepath.Join(root, "proc/sys/fs"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "proc/sys/fs/pipe-user-pages-soft"), []byte("16384\n"), 0o644))
	if n, err := PipeSoftLimit(root); err != nil || n != 16384 {
		t.Errorf("PipeSoftLimit = %d, %v", n, err)
	}
}

// TestRangeHoldsPreReleasesOfItsStart: an introduced release holds its own
// betas and rcs; an introduced pre-release starts exactly there.
func TestRangeHoldsPreReleasesOfItsStart(t *testing.T) {
	a := Advisory{ID: "X", Packages: []Package{{Component: Containerd, Ranges: []Range{
		{Introduced: "2.1.0", Fixed: "2.1.5"},
		{Introduced: "2.2.0-rc.1", Fixed: "2.2.0"},
	}}}}
	for v, want := range map[string]Verdict{
		"2.0.9": NotAffected, "2.1.0-beta.0": Affected, "v2.1.0-rc.2": Affected, "2.1.0": Affected,
		"2.1.4": Affected, "2.1.5": NotAffected, "2.1.6-rc.0": NotAffected,
		"2.2.0-beta.0": NotAffected, "2.2.0-rc.0": NotAffected, "2.2.0-rc.1": Affected, "2.2.0": NotAffected,
	} {
		if got, _ := a.Match(Containerd, MustParse(v), "", ""); got != want {
			t.Errorf("%s: verdict %v, want %v", v, got, want)
		}
	}
}
