package app

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"code.cloudfoundry.org/lager/v3"

	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/metrics"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
	"github.com/cloudfoundry/cellguard/src/internal/watch"
)

// The watch section's defaults, for the flags.
const (
	DefaultWatchPeriod   = watch.DefaultPeriod
	DefaultHealPerMinute = watch.DefaultHealPerMinute
)

// Watch is one `cellguard watch`: the plan's checks with drain's
// severities and policy, scanned at start, after systemd events and every
// period, until ctx ends (or once).
type Watch struct {
	w    *watch.Watcher
	once bool
}

// WatchSettings are what the command line says besides the plan and the
// (already merged and judged) watch section.
type WatchSettings struct {
	Root string
	// SystemdAddress is systemd's D-Bus address; "" is the system bus
	// when systemd is init under Root.
	SystemdAddress string
	Once           bool
	Logger         lager.Logger
}

// NewWatch builds the watch of plan and the section wc. Its error is the
// operator's (the policy names an unknown check).
func NewWatch(plan *Plan, wc config.Watch, s WatchSettings) (*Watch, error) {
	// The same plan as validate, with drain's severities and policy.
	opts, err := plan.Options(validator.Drain)
	if err != nil {
		return nil, err
	}
	out := watch.Config{
		// Each scan reads the host once and binds the checks to that read.
		Registry: plan.WatchRegistry(watch.ConfirmSchedule),
		// Periodic and event scans re-read only what changed, and
		// everything every snapshot.DefaultFullEvery (docs/performance.md).
		Read:          (&snapshot.Incremental{Spec: plan.Snapshot}).Read,
		OnEvent:       OnEvent,
		Options:       opts,
		Period:        wc.Period.Duration,
		Heal:          wc.Heal,
		HealPerMinute: *wc.HealPerMinute,
		HealLedger:    filepath.Join(s.Root, HealLedger),
		Listen:        wc.Listen,
		Textfile:      wc.Textfile,
		Root:          s.Root,
		RuntimeRoots:  plan.RuntimeRoots(),
		Once:          s.Once,
		Logger:        s.Logger,
	}
	if wc.TLS.Cert != "" {
		out.TLS = &watch.TLSFiles{Cert: wc.TLS.Cert, Key: wc.TLS.Key, CA: wc.TLS.CA}
	}
	switch {
	case s.SystemdAddress != "":
		out.Systemd = watch.DBus{Options: systemd.Options{Address: s.SystemdAddress}}
	case hostroot.IsLive(s.Root) && systemd.Booted("/"):
		out.Systemd = watch.DBus{}
	}
	return &Watch{w: watch.New(out), once: s.Once}, nil
}

// Run watches until ctx ends, or for one scan with Once; then it returns
// the metrics in Prometheus' text format (nil unless Once).
func (u *Watch) Run(ctx context.Context) ([]byte, error) {
	u.w.Run(ctx)
	if !u.once {
		return nil, nil
	}
	return metrics.Encode(u.w.Metrics().All, false)
}

// WatchFlags are watch's flags with their values, defaults included; Set
// names the ones the command line gave.
type WatchFlags struct {
	Set                    map[string]bool
	Listen, Textfile       string
	Heal                   bool
	Period                 time.Duration
	HealPerMinute          int
	TLSCert, TLSKey, TLSCA string
}

// WatchSection is the config's watch section with the flags the command
// line gave over it (and their defaults where the config is silent),
// judged.
func WatchSection(wc config.Watch, f WatchFlags) (config.Watch, error) {
	set := f.Set
	if set["listen"] {
		wc.Listen = f.Listen
	}
	if set["heal"] {
		wc.Heal = f.Heal
	}
	if set["period"] || wc.Period.Duration == 0 {
		wc.Period.Duration = f.Period
	}
	if set["heal-per-minute"] || wc.HealPerMinute == nil {
		n := f.HealPerMinute
		wc.HealPerMinute = &n
	}
	if set["textfile"] {
		wc.Textfile = f.Textfile
	}
	if set["tls-cert"] || set["tls-key"] || set["tls-ca"] {
		wc.TLS = config.TLSFiles{Cert: f.TLSCert, Key: f.TLSKey, CA: f.TLSCA}
	}
	if wc.Period.Duration <= 0 || *wc.HealPerMinute <= 0 {
		return config.Watch{}, fmt.Errorf("--period and --heal-per-minute must be above zero")
	}
	if err := (&config.Config{Watch: wc}).Validate(nil); err != nil {
		return config.Watch{}, err
	}
	return wc, nil
}
