package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/runtimever"
)

// advisoriesFixture is a root with an operator file that replaces one
// shipped entry, adds one and disables one, and a config naming it.
func advisoriesFixture(t *testing.T) (root, cfgPath string) {
	t.Helper()
	root = t.TempDir()
	doc := `{"schema":1,"advisories":[
	  {"id":"CVE-2020-15257","disabled":true},
	  {"id":"CVE-2024-21626","component":"runc","class":"escape","summary":"site: our runc build carries the fix",
	   "references":["https://github.com/opencontainers/runc/security/advisories/GHSA-xr7r-f8xq-vfvv"],
	   "affected":[{"series":"1.1","introduced":"1.0.0-rc93","fixed":"1.1.12"}],"backports":["1.1.10-site3"],
	   "severity":{"pre-start":"blocking","drain":"warning"}},
	  {"id":"SITE-DOCKERD-1","component":"dockerd","summary":"site rule","references":["https://example.org/1"],
	   "affected":[{"introduced":"0","fixed":"29.0.0"}]}]}`
	writeFile(t, filepath.Join(root, "var/vcap/jobs/cellguard/config/advisories.json"), doc)
	cfgPath = filepath.Join(t.TempDir(), "cellguard.json")
	writeFile(t, cfgPath, `{"validator":{"advisories_file":"/var/vcap/jobs/cellguard/config/advisories.json"}}`)
	return root, cfgPath
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
		"* blocking only while its condition holds",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// one row, read column by column
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 7 && f[1] == "CVE-2024-45310" {
			if got := strings.Join(f, " "); got != "runc CVE-2024-45310 limited-host-write warning info <1.1.14, 1.2.0-rc.1..<1.2.0-rc.3 shipped" {
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

func TestAdvisoriesOperatorFile(t *testing.T) {
	root, cfg := advisoriesFixture(t)
	code, out, errs := runCLI(t, "advisories", "--config", cfg, "--root", root)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"operator file /var/vcap/jobs/cellguard/config/advisories.json: 1 replacing shipped, 1 added, 1 disabled (CVE-2020-15257)",
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
			t.Errorf("disabled entry listed: %q", l)
		}
		if len(f) >= 2 && f[1] == "SITE-DOCKERD-1" && !strings.HasSuffix(l, " operator") {
			t.Errorf("added entry's origin: %q", l)
		}
	}

	// --shipped-only ignores the config's file
	_, out, _ = runCLI(t, "advisories", "--config", cfg, "--root", root, "--shipped-only")
	if strings.Contains(out, "SITE-DOCKERD-1") || !strings.Contains(out, "CVE-2020-15257") {
		t.Errorf("--shipped-only still merged the operator file:\n%s", out)
	}
}

func TestAdvisoriesJSON(t *testing.T) {
	root, cfg := advisoriesFixture(t)
	code, out, errs := runCLI(t, "advisories", "--config", cfg, "--root", root, "--json", "--component", "runc")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		AdvisoriesFile string   `json:"advisories_file"`
		Disabled       []string `json:"disabled"`
		Advisories     []struct {
			ID, Component, Class, Origin string
			PreStart                     string   `json:"pre_start"`
			Drain                        string   `json:"drain"`
			FixedIn                      []string `json:"fixed_in"`
			Backports                    []string `json:"backports"`
			References                   []string `json:"references"`
			Condition                    string   `json:"condition"`
		} `json:"advisories"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.AdvisoriesFile != "/var/vcap/jobs/cellguard/config/advisories.json" || len(doc.Disabled) != 1 || doc.Disabled[0] != "CVE-2020-15257" {
		t.Errorf("file %q, disabled %v", doc.AdvisoriesFile, doc.Disabled)
	}
	byID := map[string]int{}
	for i, a := range doc.Advisories {
		if a.Component != "runc" {
			t.Errorf("--component runc listed %s (%s)", a.ID, a.Component)
		}
		if len(a.References) == 0 {
			t.Errorf("%s: no references", a.ID)
		}
		byID[a.ID] = i
	}
	a := doc.Advisories[byID["CVE-2024-21626"]]
	if a.Origin != runtimever.OriginReplaced || strings.Join(a.Backports, ",") != "1.1.10-site3" || strings.Join(a.FixedIn, ",") != "1.1.12" {
		t.Errorf("replaced entry: %+v", a)
	}
	hang := doc.Advisories[byID["runc-rc93-init-hang"]]
	if hang.Class != "hang" || hang.PreStart != "blocking" || hang.Drain != "warning" || hang.Condition != runtimever.ConditionPipeSoftLimit {
		t.Errorf("rc93 hang: %+v", hang)
	}
}

func TestAdvisoriesCannotRun(t *testing.T) {
	root, cfg := advisoriesFixture(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown component", []string{"--component", "kubelet"}, "want one of runc, crun, containerd"},
		{"missing file", []string{"--root", root, "--advisories-file", "/nope.json"}, "read advisories"},
		{"both sources", []string{"--advisories-file", "/a.json", "--shipped-only"}, "exclude each other"},
		{"arguments", []string{"runc"}, "unexpected arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, append([]string{"advisories", "--config", cfg}, tc.args...)...)
			if code != ExitCantRun || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errs, ExitCantRun, tc.want)
			}
		})
	}
	// on a real root, a world-writable file could silence a blocking
	// check: refused as validate refuses it
	bad := filepath.Join(t.TempDir(), "advisories.json")
	writeFile(t, bad, `{"schema":1,"advisories":[]}`)
	if err := os.Chmod(bad, 0o666); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, "advisories", "--config", cfg, "--root", "/", "--advisories-file", bad)
	if code != ExitCantRun || !strings.Contains(errs, "world-writable") || !strings.Contains(errs, "cellguard: hint:") {
		t.Errorf("world-writable file: exit %d, stderr %q", code, errs)
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
