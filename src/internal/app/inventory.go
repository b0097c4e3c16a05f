package app

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

// Installed is one thing cellguard puts on a VM: where, who puts it there,
// and how it goes when nothing uses it.
type Installed struct {
	Kind string
	// Path as the VM sees it; for UnitDirs, the unit directories daemonctl
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
	// InUse says who still uses Path; it then stays, with that reason.
	InUse func(root string) (string, bool)
	// Remove takes it away, saying what it did.
	Remove func(ctx context.Context, u *Uninstaller, it Installed) ([]daemonctl.PruneItem, error)
}

// UnitDirs is the unit directories' row's Path: the directories daemonctl
// lists.
const UnitDirs = daemonctl.PersistentUnitDir + ", " + daemonctl.RuntimeUnitDir

// Paths are where a VM keeps what the inventory lists besides the config's
// files: BOSH's paths, which cli knows.
type Paths struct {
	// WatchPIDFile is cellguard watch's pidfile (bin/watch_ctl's).
	WatchPIDFile string
	// MetricTargets is the copy of the metric targets metrics-discovery's
	// registrar reads; MetricTargetsSource is the job's, which pre-start
	// copies there.
	MetricTargets, MetricTargetsSource string
	// Textfile is validate's and drain's textfile: the flag, else the
	// config's validator.prometheus_textfile.
	Textfile string
	// LiftFile is the drain lift.
	LiftFile string
}

// Inventory is the one list of what cellguard installs on a VM configured
// by cfg, in the order uninstall removes it; prune is its first row, for
// the config instead of for everything.
func Inventory(cfg *config.Config, p Paths) []Installed {
	sysctlFile := cfg.Sysctl.File
	if sysctlFile == "" {
		sysctlFile = sysctl.DefaultFile
	}
	promFile := p.Textfile
	if promFile == "" {
		promFile = cfg.Validator.PrometheusFile
	}
	watchInUse := func(root string) (string, bool) { return watchInUse(root, p.WatchPIDFile) }
	return []Installed{
		{Kind: "units and drop-ins", Path: UnitDirs, Remove: removeUnitFiles, PreStart: []string{
			`"${CELLGUARD}" unit install`, `"${CELLGUARD}" unit prune`, `"${CELLGUARD}" unit protect-supervisor`,
			`"${CELLGUARD}" unit delegate`}},
		{Kind: daemonctl.KindStamp, Path: "/run/cellguard/verified", Remove: removeLegacyStamps},
		{Kind: "sysctl-file", Path: sysctlFile, Temps: true, Remove: removeSysctlFile,
			PreStart: []string{`"${CELLGUARD}" sysctl apply`}},
		{Kind: "prometheus-textfile", Path: promFile, Head: textfileHead, Temps: true,
			Remove: removeOwn("validate's and drain's gauges; node_exporter stops exporting them")},
		{Kind: "watch-file", Path: p.MetricTargets, Temps: true, Dir: true, InUse: watchInUse,
			Remove:   removeOwn("the metric targets metrics-discovery's registrar read for cellguard watch"),
			PreStart: []string{"cp " + p.MetricTargetsSource + " " + p.MetricTargets}},
		{Kind: "watch-file", Path: cfg.Watch.Textfile, Head: textfileHead, Temps: true, InUse: watchInUse,
			Remove: removeOwn("cellguard watch's gauges; node_exporter stops exporting them")},
		{Kind: "drain-lift", Path: p.LiftFile, Temps: true, Dir: true, Remove: removeLift},
	}
}

// Uninstaller carries what removing the inventory needs.
type Uninstaller struct {
	M     *Units
	Root  string
	Now   time.Time
	Force bool // --force-supervisor-drop-in
}

// remove removes every row of inv that nothing uses, then the temp files a
// killed write left beside them and the directories that are cellguard's
// alone, once empty.
func (u *Uninstaller) remove(ctx context.Context, inv []Installed) ([]daemonctl.PruneItem, error) {
	var items []daemonctl.PruneItem
	var errs []error
	for _, it := range inv {
		if it.Path == "" {
			continue
		}
		if it.InUse != nil {
			if why, used := it.InUse(u.Root); used {
				if _, err := os.Stat(hostroot.Join(u.Root, it.Path)); err == nil {
					items = append(items, daemonctl.PruneItem{Path: it.Path, Kind: it.Kind, Action: daemonctl.Kept, Why: why})
				}
				continue
			}
		}
		got, err := it.Remove(ctx, u, it)
		items, errs = append(items, got...), append(errs, err)
	}
	for _, it := range inv {
		if it.Path == "" || !it.Temps {
			continue
		}
		base := filepath.Base(it.Path)
		temps, err := safefile.RemoveStaleTemps(hostroot.Join(u.Root, filepath.Dir(it.Path)),
			func(t string) bool { return t == base }, time.Minute, u.Now)
		errs = append(errs, err)
		for _, hp := range temps {
			items = append(items, daemonctl.PruneItem{Path: filepath.Join(filepath.Dir(it.Path), filepath.Base(hp)),
				Kind: daemonctl.KindTempFile, Action: daemonctl.Removed, Why: "a temp file left by a write that was killed before its rename"})
		}
	}
	for _, it := range inv {
		if it.Path != "" && it.Dir {
			_, err := safefile.RemoveDirIfEmpty(hostroot.Join(u.Root, filepath.Dir(it.Path)))
			errs = append(errs, err)
		}
	}
	return items, errors.Join(errs...)
}

func removeUnitFiles(ctx context.Context, u *Uninstaller, _ Installed) ([]daemonctl.PruneItem, error) {
	res, err := u.M.m.Prune(ctx, daemonctl.PruneOptions{ForceSupervisorDropIn: u.Force, Uninstall: true, Now: u.Now})
	return res.Items, err
}

func removeLegacyStamps(_ context.Context, u *Uninstaller, _ Installed) ([]daemonctl.PruneItem, error) {
	return u.M.m.RemoveStamps()
}

func removeSysctlFile(_ context.Context, u *Uninstaller, it Installed) ([]daemonctl.PruneItem, error) {
	removed, err := sysctl.Host{Root: u.Root}.RemoveFile(it.Path)
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
func removeOwn(why string) func(context.Context, *Uninstaller, Installed) ([]daemonctl.PruneItem, error) {
	return func(_ context.Context, u *Uninstaller, it Installed) ([]daemonctl.PruneItem, error) {
		item, err := removeOwnFile(u.Root, it.Path, it.Kind, it.Head, why)
		return appendItem(nil, item), err
	}
}

func removeLift(_ context.Context, u *Uninstaller, it Installed) ([]daemonctl.PruneItem, error) {
	lifted, err := drain.CancelLift(hostroot.Join(u.Root, it.Path))
	if !lifted {
		return nil, err
	}
	return []daemonctl.PruneItem{{Path: it.Path, Kind: it.Kind, Action: daemonctl.Removed, Why: "an operator's drain lift"}}, err
}

// watchInUse: while cellguard watch runs it writes its textfile again, and
// the metric targets point scrapers at it. Removing the addon stops watch
// (monit), and a recreate then drops both.
func watchInUse(root, pidfile string) (string, bool) {
	pid, notRunning := WatchRunning(root, pidfile)
	if notRunning != "" {
		return "", false
	}
	return fmt.Sprintf("cellguard watch runs (pid %d, monit job cellguard-watch) and would write it again; "+
		"stop it first (sudo /var/vcap/bosh/bin/monit stop cellguard-watch) and run uninstall again, "+
		"or remove the addon (monit then stops watch) and recreate the VM", pid), true
}
