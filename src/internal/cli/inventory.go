package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/daemonctl"
	"github.com/cloudfoundry/cellguard/src/internal/drain"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/safefile"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// installed is one thing cellguard puts on a VM: where, who puts it there,
// and how it goes when nothing uses it.
type installed struct {
	Kind string
	// Path as the VM sees it; for unitDirs, the unit directories daemonctl
	// lists. "" when the config names none (no textfile configured).
	Path string
	// PreStart is what pre-start.erb runs to install it; none when another
	// command writes it (validate, drain, watch).
	// TestPreStartInstallsWhatTheInventoryLists holds pre-start.erb to it.
	PreStart []string
	// Head starts every file of this kind cellguard writes; a file at Path
	// without it is someone else's and stays. nil: Path is cellguard's alone.
	Head []byte
	// Temps: a killed write may leave temp files beside Path.
	Temps bool
	// Dir is Path's directory, cellguard's alone: removed once empty.
	Dir bool
	// inUse says who still uses Path; it then stays, with that reason.
	inUse func(root string) (string, bool)
	// remove takes it away, saying what it did.
	remove func(ctx context.Context, u *uninstaller, it installed) ([]daemonctl.PruneItem, error)
}

// The files of `cellguard watch` (jobs/cellguard/templates/bin/watch_ctl.erb
// and pre-start.erb): its pid, and the copy of the metric targets
// metrics-discovery's registrar reads from /var/vcap/data/*/.
const (
	watchPIDFile      = "/var/vcap/sys/run/cellguard/watch.pid"
	metricTargetsFile = "/var/vcap/data/cellguard/metric_targets.yml"
	unitDirs          = daemonctl.PersistentUnitDir + ", " + daemonctl.RuntimeUnitDir
)

// inventory is the one list of what cellguard installs on a VM configured
// by cfg, in the order uninstall removes it; prune is its first row, for
// the config instead of for everything. promFile and liftFile are
// uninstall's flags (their defaults from the config and drain).
func inventory(cfg *config.Config, promFile, liftFile string) []installed {
	sysctlFile := cfg.Sysctl.File
	if sysctlFile == "" {
		sysctlFile = sysctl.DefaultFile
	}
	if promFile == "" {
		promFile = cfg.Validator.PrometheusFile
	}
	return []installed{
		{Kind: "units and drop-ins", Path: unitDirs, remove: removeUnitFiles, PreStart: []string{
			`"${CELLGUARD}" unit install`, `"${CELLGUARD}" unit prune`, `"${CELLGUARD}" unit protect-supervisor`,
			`"${CELLGUARD}" unit delegate`}},
		{Kind: daemonctl.KindStamp, Path: "/run/cellguard/verified", remove: removeLegacyStamps},
		{Kind: "sysctl-file", Path: sysctlFile, Temps: true, remove: removeSysctlFile,
			PreStart: []string{`"${CELLGUARD}" sysctl apply`}},
		{Kind: "prometheus-textfile", Path: promFile, Head: textfileHead, Temps: true,
			remove: removeOwn("validate's and drain's gauges; node_exporter stops exporting them")},
		{Kind: "watch-file", Path: metricTargetsFile, Temps: true, Dir: true, inUse: watchInUse,
			remove:   removeOwn("the metric targets metrics-discovery's registrar read for cellguard watch"),
			PreStart: []string{"cp /var/vcap/jobs/cellguard/config/metric_targets.yml " + metricTargetsFile}},
		{Kind: "watch-file", Path: cfg.Watch.Textfile, Head: textfileHead, Temps: true, inUse: watchInUse,
			remove: removeOwn("cellguard watch's gauges; node_exporter stops exporting them")},
		{Kind: "drain-lift", Path: liftFile, Temps: true, Dir: true, remove: removeLift},
	}
}

// uninstaller carries what removing the inventory needs.
type uninstaller struct {
	m     *daemonctl.Manager
	root  string
	now   time.Time
	force bool // --force-supervisor-drop-in
}

// run removes every row of inv that nothing uses, then the temp files a
// killed write left beside them and the directories that are cellguard's
// alone, once empty.
func (u *uninstaller) run(ctx context.Context, inv []installed) ([]daemonctl.PruneItem, error) {
	var items []daemonctl.PruneItem
	var errs []error
	for _, it := range inv {
		if it.Path == "" {
			continue
		}
		if it.inUse != nil {
			if why, used := it.inUse(u.root); used {
				if _, err := os.Stat(hostroot.Join(u.root, it.Path)); err == nil {
					items = append(items, daemonctl.PruneItem{Path: it.Path, Kind: it.Kind, Action: daemonctl.Kept, Why: why})
				}
				continue
			}
		}
		got, err := it.remove(ctx, u, it)
		items, errs = append(items, got...), append(errs, err)
	}
	for _, it := range inv {
		if it.Path == "" || !it.Temps {
			continue
		}
		base := filepath.Base(it.Path)
		temps, err := safefile.RemoveStaleTemps(hostroot.Join(u.root, filepath.Dir(it.Path)),
			func(t string) bool { return t == base }, time.Minute, u.now)
		errs = append(errs, err)
		for _, hp := range temps {
			items = append(items, daemonctl.PruneItem{Path: filepath.Join(filepath.Dir(it.Path), filepath.Base(hp)),
				Kind: daemonctl.KindTempFile, Action: daemonctl.Removed, Why: "a temp file left by a write that was killed before its rename"})
		}
	}
	for _, it := range inv {
		if it.Path != "" && it.Dir {
			_, err := safefile.RemoveDirIfEmpty(hostroot.Join(u.root, filepath.Dir(it.Path)))
			errs = append(errs, err)
		}
	}
	return items, errors.Join(errs...)
}

func removeUnitFiles(ctx context.Context, u *uninstaller, _ installed) ([]daemonctl.PruneItem, error) {
	res, err := u.m.Prune(ctx, daemonctl.PruneOptions{ForceSupervisorDropIn: u.force, Uninstall: true, Now: u.now})
	return res.Items, err
}

func removeLegacyStamps(_ context.Context, u *uninstaller, _ installed) ([]daemonctl.PruneItem, error) {
	return u.m.RemoveStamps()
}

func removeSysctlFile(_ context.Context, u *uninstaller, it installed) ([]daemonctl.PruneItem, error) {
	removed, err := sysctl.Host{Root: u.root}.RemoveFile(it.Path)
	switch {
	case errors.Is(err, sysctl.ErrNotOurs):
		return []daemonctl.PruneItem{{Path: it.Path, Kind: it.Kind, Action: daemonctl.Kept, Why: err.Error()}}, nil
	case err != nil || !removed:
		return nil, err
	}
	return []daemonctl.PruneItem{{Path: it.Path, Kind: it.Kind, Action: daemonctl.Removed,
		Why: "the persisted sysctl profile; live values stay as they are until the next reboot"}}, nil
}

// removeOwn removes the file at it.Path when it starts with it.Head.
func removeOwn(why string) func(context.Context, *uninstaller, installed) ([]daemonctl.PruneItem, error) {
	return func(_ context.Context, u *uninstaller, it installed) ([]daemonctl.PruneItem, error) {
		item, err := removeOwnFile(u.root, it.Path, it.Kind, it.Head, why)
		return appendItem(nil, item), err
	}
}

func removeLift(_ context.Context, u *uninstaller, it installed) ([]daemonctl.PruneItem, error) {
	lifted, err := drain.CancelLift(hostroot.Join(u.root, it.Path))
	if !lifted {
		return nil, err
	}
	return []daemonctl.PruneItem{{Path: it.Path, Kind: it.Kind, Action: daemonctl.Removed, Why: "an operator's drain lift"}}, err
}

// watchInUse: while cellguard watch runs it writes its textfile again, and
// the metric targets point scrapers at it. Removing the addon stops watch
// (monit), and a recreate then drops both.
func watchInUse(root string) (string, bool) {
	pid, notRunning := watchRunning(root, watchPIDFile)
	if notRunning != "" {
		return "", false
	}
	return fmt.Sprintf("cellguard watch runs (pid %d, monit job cellguard-watch) and would write it again; "+
		"stop it first (sudo /var/vcap/bosh/bin/monit stop cellguard-watch) and run uninstall again, "+
		"or remove the addon (monit then stops watch) and recreate the VM", pid), true
}
