package cli

import (
	"github.com/cloudfoundry/cellguard/src/internal/app"
	"github.com/cloudfoundry/cellguard/src/internal/config"
)

// The files of `cellguard watch` (jobs/cellguard/templates/bin/watch_ctl.erb
// and pre-start.erb): its pid, and the copy of the metric targets
// metrics-discovery's registrar reads from /var/vcap/data/*/.
const (
	watchPIDFile      = "/var/vcap/sys/run/cellguard/watch.pid"
	metricTargetsFile = "/var/vcap/data/cellguard/metric_targets.yml"
	// metricTargetsJobFile is the job's copy, which pre-start copies.
	metricTargetsJobFile = "/var/vcap/jobs/cellguard/config/metric_targets.yml"
)

// inventory is app.Inventory on this VM's BOSH paths; promFile and
// liftFile are uninstall's flags (their defaults from the config and
// drain).
func inventory(cfg *config.Config, promFile, liftFile string) []app.Installed {
	return app.Inventory(cfg, app.Paths{WatchPIDFile: watchPIDFile, MetricTargets: metricTargetsFile,
		MetricTargetsSource: metricTargetsJobFile, Textfile: promFile, LiftFile: liftFile})
}
