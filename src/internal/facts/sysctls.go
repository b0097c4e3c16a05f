package facts

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// SysctlFacts is what sysctl-profile judges: the profile the job
// configured, and each of its keys live and at boot.
type SysctlFacts struct {
	Err error
	// Profile is the resolved profile; ResolveErr when the settings do not
	// resolve to one.
	Profile    sysctl.Profile
	ResolveErr error
	// NoProcSys: the root has no proc/sys (a fixture tree that models no
	// kernel parameters); nothing was read.
	NoProcSys bool
	// Report is each key's live and boot value; ReportErr when it could
	// not be read at all.
	Report    sysctl.CheckReport
	ReportErr error
}

func readSysctls(_ context.Context, s Spec) SysctlFacts {
	var f SysctlFacts
	f.Profile, f.ResolveErr = sysctl.Resolve(s.Sysctl)
	if f.ResolveErr != nil {
		f.ResolveErr = fmt.Errorf("resolve sysctl profile: %w", f.ResolveErr)
		return f
	}
	if len(f.Profile.Entries) == 0 {
		return f
	}
	if _, err := os.Stat(filepath.Join(hostroot.Dir(s.Root), "proc/sys")); errors.Is(err, os.ErrNotExist) {
		f.NoProcSys = true
		return f
	}
	f.Report, f.ReportErr = sysctl.Check(s.Root, f.Profile)
	return f
}
