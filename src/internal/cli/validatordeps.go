package cli

import (
	"github.com/cloudfoundry/cellguard/src/internal/bpfiter"
	"github.com/cloudfoundry/cellguard/src/internal/checks"
	"github.com/cloudfoundry/cellguard/src/internal/config"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/procfs"
	"github.com/cloudfoundry/cellguard/src/internal/snapshot"
	"github.com/cloudfoundry/cellguard/src/internal/systemd"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// validatorDeps is what the checks read, from the job's config, for
// validate and watch alike: one code path, the same checks on the same
// settings. runtimeRoots (flags) replace the config's when given; with
// neither, the default roots are scanned.
func validatorDeps(root string, cfg *config.Config, phase validator.Phase, runtimeRoots []string) checks.Deps {
	vc := cfg.Validator
	d := checks.Deps{
		Root:             root,
		RuntimeRoots:     vc.RuntimeRoots,
		Namespaces:       vc.Namespaces,
		ExtraCgroupRoots: append(append([]string(nil), vc.ExtraCgroupRoots...), vc.ExtraCgroupSlices...),
		RuncInitMaxAge:   vc.RuncInitMaxAge.Duration,
		Phase:            phase,
		RuntimeBinaries:  vc.RuntimeBinaries,
		RuncPaths:        boshRuncPaths,
		AdvisoriesFile:   vc.AdvisoriesFile,
		Daemons:          auditedDaemons(cfg.AuditedDaemons()),
		DelegateUnits:    cfg.DelegateUnits,
		Sysctl:           sysctlSettings(cfg.Sysctl),
	}
	if hostroot.IsLive(root) {
		// The host's manager, over D-Bus; a fixture root has none.
		d.Systemd = dbusSystemdVersion{}
		d.SystemdUnits = checks.DialSystemd(systemd.Options{})
	}
	if len(runtimeRoots) > 0 {
		d.RuntimeRoots = splitList(runtimeRoots)
	}
	if len(d.RuntimeRoots) == 0 {
		d.RuntimeRoots = defaultRuntimeRoots()
	}
	return d
}

// validatorPolicy is the operator's policy for a run in phase, for
// validate and watch alike: the config's ignore list plus ignore (flags),
// and the config's blocking list for the phase, when it has one.
func validatorPolicy(vc config.Validator, phase validator.Phase, ignore []string) validator.Policy {
	p := validator.Policy{Ignore: append(splitList(vc.Ignore), splitList(ignore)...)}
	if list, ok := vc.Blocking[string(phase)]; ok {
		p.Blocking = map[validator.Phase][]string{phase: splitList(list)}
	}
	return p
}

// snapshotSpec is what the checks' snapshot reads, from their deps: with
// d.Kernel, every process's stat from one BPF iterator where it runs
// (kernel threads excepted: /proc has their full names).
func snapshotSpec(d checks.Deps) snapshot.Spec {
	s := snapshot.Spec{Root: d.Root, RuntimeRoots: d.RuntimeRoots, Namespaces: d.Namespaces}
	if k := d.Kernel; k != nil {
		s.Procs = func() ([]procfs.Stat, error) {
			ps, err := bpfiter.Procs(k)
			if err != nil {
				return nil, err
			}
			stats := make([]procfs.Stat, 0, len(ps))
			for _, p := range ps {
				if !p.KThread {
					stats = append(stats, p.Stat)
				}
			}
			return stats, nil
		}
	}
	return s
}
