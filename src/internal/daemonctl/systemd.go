package daemonctl

import (
	"context"

	"github.com/cloudfoundry/cellguard/src/internal/systemd"
)

// systemdAPI is the part of systemd daemonctl asks for: what its planners
// need to know and the few actions it takes. *systemd.Conn is the real
// one (its contract tests run in nspawn boxes, src/tests/integration); the
// planner tests hand Manager a fake, so a refused KillMode, a unit in use
// or a forced drop-in removal are decided without root.
type systemdAPI interface {
	Version(ctx context.Context) (string, error)
	Unit(ctx context.Context, name string) (*systemd.Unit, error)
	UnitProcesses(ctx context.Context, unit string) ([]systemd.Process, error)
	UnitByPID(ctx context.Context, pid int) (string, error)
	Reload(ctx context.Context) error
	Start(ctx context.Context, unit string) (systemd.JobResult, error)
	Stop(ctx context.Context, unit string) (systemd.JobResult, error)
	ResetFailed(ctx context.Context, unit string) error
	RealizeCgroups(ctx context.Context, unit string) error
	Close()
}

var _ systemdAPI = (*systemd.Conn)(nil)
