package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// qemuCPIs gives a qemu shape's director its second CPI: the QEMU CPI's
// config, then a cpi config naming both, before any stemcell is uploaded
// (upload-stemcell gives each CPI the stemcells of its formats).
func (f *fleet) qemuCPIs(ctx context.Context, nspawnConfig, nspawnExec, qemuConfig, qemuExec string) error {
	cfg, err := qemuCPIConfigFor(f.env, f.cpiState)
	if err != nil {
		return err
	}
	if err := os.WriteFile(qemuConfig, cfg, 0o600); err != nil {
		return fmt.Errorf("write the QEMU CPI's config: %w", err)
	}
	cpis := filepath.Join(f.work, "cpi-config.yml")
	if err := os.WriteFile(cpis, []byte(cpiConfigYAML(nspawnExec, qemuExec)), 0o600); err != nil {
		return fmt.Errorf("write the cpi config: %w", err)
	}
	r, err := f.bosh.MustRun(ctx, "update-cpi-config", cpis)
	if err != nil {
		return fmt.Errorf("bosh update-cpi-config (nspawn %s, qemu %s): %w", nspawnConfig, qemuConfig, err)
	}
	f.story(fmt.Sprintf("   bosh update-cpi-config: nspawn (compilation) and qemu (the cells): %s", r.Took.Round(100*time.Millisecond)))
	return nil
}
