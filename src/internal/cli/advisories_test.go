package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// advisoriesFixture is a config whose validator.advisories (OSV records)
// replace one shipped record, add one and withdraw one, and which promotes
// a shipped security advisory.
func advisoriesFixture(t *testing.T) (cfgPath string) {
	t.Helper()
	cfgPath = filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, cfgPath, `{"validator":{"blocking_advisories":["CVE-2024-45310"],"advisories":[
	  {"id":"CVE-2020-15257","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"},
	  {"id":"CVE-2024-21626","modified":"2026-12-06T00:00:00Z","summary":"site: our runc build carries the fix",
	   "references":[{"type":"ADVISORY","url":"https://github.com/opencontainers/runc/security/advisories/GHSA-xr7r-f8xq-vfvv"}],
	   "affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"type":"SEMVER","events":[{"introduced":"1.0.0-rc93"},{"fixed":"1.1.12"}]}]}],
	   "database_specific":{"cellguard":{"impact":"escape","backports":["1.1.10-site3"]}}},
	  {"id":"SITE-DOCKERD-1","modified":"2026-12-06T00:00:00Z","summary":"site rule","references":[{"type":"WEB","url":"https://example.org/1"}],
	   "affected":[{"package":{"ecosystem":"Go","name":"github.com/moby/moby"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"29.0.0"}]}]}]}]}}`)
	return cfgPath
}

func TestAdvisoriesShipped(t *testing.T) {
	shipped, err := runtimever.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, cfg, `{}`)
	code, out, errs := runCLI(t, "advisories", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := strconv.Itoa(len(shipped)); lines[0] != want+" advisories: "+want+" shipped" {
		t.Errorf("first line %q, want the count of %s shipped", lines[0], want)
	}
	rows := 0
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) >= 7 && runtimever.KnownComponent(f[0]) {
			rows++
		}
	}
	if rows != len(shipped) {
		t.Errorf("%d table rows, want %d:\n%s", rows, len(shipped), out)
	}
	for _, want := range []string{
		"COMPONENT", "AFFECTED (upper bound = fixed in)",
		"runc-rc93-init-hang", "blocking*", // conditional entries are marked
		"* blocking only while its conditions hold",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// one row, read column by column
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 7 && f[1] == "CVE-2024-45310" {
			if got := strings.Join(f, " "); got != "runc CVE-2024-45310 security warning info <1.1.14, 1.2.0-rc.1..<1.2.0-rc.3 shipped" {
				t.Errorf("row %q", got)
			}
		}
	}

	code, out, _ = runCLI(t, "advisories", "--config", cfg, "--component", "dockerd")
	if code != ExitOK {
		t.Fatalf("--component dockerd: exit %d", code)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 7 && runtimever.KnownComponent(f[0]) && f[0] != "dockerd" {
			t.Errorf("--component dockerd listed %q", l)
		}
	}
	if !strings.Contains(out, "dockerd-v3-file-capabilities") {
		t.Errorf("seed 003's dockerd entry missing:\n%s", out)
	}
}

func TestAdvisoriesOperatorRecords(t *testing.T) {
	cfg := advisoriesFixture(t)
	code, out, errs := runCLI(t, "advisories", "--config", cfg)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"operator's validator.advisories: 1 replacing shipped, 1 added, 1 withdrawn (CVE-2020-15257); promoted to blocking: CVE-2024-45310",
		"operator, replaces shipped",
		"SITE-DOCKERD-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[1] == "CVE-2020-15257" {
			t.Errorf("withdrawn entry listed: %q", l)
		}
		if len(f) >= 2 && f[1] == "SITE-DOCKERD-1" && !strings.HasSuffix(l, " operator") {
			t.Errorf("added entry's origin: %q", l)
		}
		if len(f) >= 5 && f[1] == "CVE-2024-45310" && (f[3] != "blocking" || f[4] != "warning") {
			t.Errorf("promoted entry's severities: %q", l)
		}
	}

	// --shipped-only ignores the config's records and promotions
	_, out, _ = runCLI(t, "advisories", "--config", cfg, "--shipped-only")
	if strings.Contains(out, "SITE-DOCKERD-1") || !strings.Contains(out, "CVE-2020-15257") || strings.Contains(out, "promoted") {
		t.Errorf("--shipped-only still merged the operator's records:\n%s", out)
	}
}

func TestAdvisoriesJSON(t *testing.T) {
	cfg := advisoriesFixture(t)
	code, out, errs := runCLI(t, "advisories", "--config", cfg, "--json", "--component", "runc")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Operator   int      `json:"operator_records"`
		Withdrawn  []string `json:"withdrawn"`
		Advisories []struct {
			ID, Component, Class, Origin string
			PreStart                     string   `json:"pre_start"`
			Drain                        string   `json:"drain"`
			FixedIn                      []string `json:"fixed_in"`
			Backports                    []string `json:"backports"`
			References                   []string `json:"references"`
			Conditions                   []string `json:"conditions"`
		} `json:"advisories"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Operator != 3 || len(doc.Withdrawn) != 1 || doc.Withdrawn[0] != "CVE-2020-15257" {
		t.Errorf("operator records %d, withdrawn %v", doc.Operator, doc.Withdrawn)
	}
	byID := map[string]int{}
	for i, a := range doc.Advisories {
		if a.Component != "runc" {
			t.Errorf("--component runc listed %s (%s)", a.ID, a.Component)
		}
		byID[a.ID] = i
	}
	a := doc.Advisories[byID["CVE-2024-21626"]]
	if a.Origin != runtimever.OriginReplaced || strings.Join(a.Backports, ",") != "1.1.10-site3" || strings.Join(a.FixedIn, ",") != "1.1.12" || a.Class != "security" {
		t.Errorf("replaced entry: %+v", a)
	}
	hang := doc.Advisories[byID["runc-rc93-init-hang"]]
	if hang.Class != "hazard" || hang.PreStart != "blocking" || hang.Drain != "warning" || strings.Join(hang.Conditions, ",") != runtimever.ConditionPipeSoftLimit {
		t.Errorf("rc93 hang: %+v", hang)
	}
}

func TestAdvisoriesCannotRun(t *testing.T) {
	cfg := advisoriesFixture(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown component", []string{"--component", "kubelet"}, "want one of runc, crun, containerd"},
		{"the old file flag", []string{"--advisories-file", "/a.json"}, "advisories-file"},
		{"arguments", []string{"runc"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"advisories", "--config", cfg}, tc.args...)...)
			if code != ExitCantRun || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, ExitCantRun, tc.want)
			}
		})
	}
	// a malformed record: the config refuses it, naming its key
	bad := filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, bad, `{"validator":{"advisories":[{"id":"SITE-1","summary":"no modified"}]}}`)
	code, _, errs := runCLI(t, "advisories", "--config", bad)
	if code != ExitCantRun || !strings.Contains(errs, "validator.advisories[0]") || !strings.Contains(errs, "modified") {
		t.Errorf("malformed record: exit %d, stderr %q", code, errs)
	}
}

func TestAdvisoriesHelp(t *testing.T) {
	code, errs, _ := runCLI(t, "advisories", "--help")
	if code != ExitOK || !strings.Contains(errs, "usage: cellguard advisories") || !strings.Contains(errs, "Exit codes:") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	if _, errs, _ := runCLI(t, "--help"); !strings.Contains(errs, "advisories") {
		t.Errorf("top-level usage does not list advisories: %s", errs)
	}
}
