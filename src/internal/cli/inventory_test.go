package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// TestPreStartInstallsWhatTheInventoryLists: pre-start.erb installs
// nothing the inventory does not list, so uninstall knows how to remove
// everything pre-start puts on a VM; and every pre-start step the
// inventory names is in pre-start.erb. A new install step in pre-start
// fails here until the inventory (and so uninstall) learns it.
func TestPreStartInstallsWhatTheInventoryLists(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "jobs", "cellguard", "templates", "bin", "pre-start.erb"))
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	inv := inventory(&config.Config{}, "", defaultLiftFile)
	var listed []string
	for _, it := range inv {
		for _, step := range it.PreStart {
			listed = append(listed, step)
			if !strings.Contains(script, step) {
				t.Errorf("inventory row %q says pre-start runs %q; pre-start.erb does not", it.Kind, step)
			}
		}
	}
	// Steps that only read or check, and the directories of the job's own
	// logs and of a textfile the config names (node_exporter's).
	readOnly := []string{`"${CELLGUARD}" config check`, `"${CELLGUARD}" validate`, `mkdir -p "${LOG_DIR}"`,
		"mkdir -p -- <%=", "mkdir -p " + filepath.Dir(metricTargetsFile)}
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		writes := strings.HasPrefix(line, `"${CELLGUARD}" `) || strings.HasPrefix(line, "cp ") ||
			strings.HasPrefix(line, "mkdir ") || strings.HasPrefix(line, "install ") || strings.Contains(line, "> /")
		if !writes {
			continue
		}
		known := func(prefix string) bool { return strings.HasPrefix(line, prefix) }
		if !slices.ContainsFunc(listed, known) && !slices.ContainsFunc(readOnly, known) {
			t.Errorf("pre-start.erb runs %q, which the inventory (inventory.go) does not list: uninstall would not remove what it writes", line)
		}
	}
}

// The inventory names each configured file once, and every row can be
// removed.
func TestInventoryFollowsTheConfig(t *testing.T) {
	cfg := &config.Config{}
	cfg.Validator.PrometheusFile = "/var/vcap/data/node_exporter/cellguard.prom"
	cfg.Sysctl.File = "/etc/sysctl.d/61-cellguard.conf"
	paths := map[string]int{}
	for _, it := range inventory(cfg, "", defaultLiftFile) {
		if it.Path != "" && it.Path != app.UnitDirs {
			paths[it.Path]++
		}
		if it.Remove == nil {
			t.Errorf("row %q has no way to remove it", it.Kind)
		}
	}
	for _, p := range []string{cfg.Validator.PrometheusFile, cfg.Sysctl.File, defaultLiftFile, metricTargetsFile} {
		if paths[p] != 1 {
			t.Errorf("%s listed %d times, want once", p, paths[p])
		}
	}
	if got := inventory(cfg, "/tmp/other.prom", defaultLiftFile); !slices.ContainsFunc(got, func(it app.Installed) bool { return it.Path == "/tmp/other.prom" }) {
		t.Error("--prometheus-textfile does not replace the config's")
	}
}
