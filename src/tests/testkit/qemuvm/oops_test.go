package qemuvm

import (
	"strings"
	"testing"
)

func TestOopsReportStartsAtTheFirstMarker(t *testing.T) {
	console := "[    1.0] systemd[1]: Started foo.\n" +
		"[    2.0] WARNING: CPU: 0 PID: 1 at drivers/foo.c:1 foo_probe+0x1/0x2\n" +
		"[  147.1] BUG: unable to handle page fault for address: ff18ea6a01289900\n" +
		"[  147.1] #PF: supervisor read access in kernel mode\n" +
		"[  147.1] RIP: 0010:update_curr+0x2a/0x1f0\n" +
		"[  147.5] Kernel panic - not syncing: Fatal exception in interrupt\n"
	if got, want := OopsReport(console, 2), "[  147.1] BUG: unable to handle page fault for address: ff18ea6a01289900\n[  147.1] #PF: supervisor read access in kernel mode"; got != want {
		t.Errorf("OopsReport(_, 2) = %q, want %q", got, want)
	}
	if got := OopsReport(console, 100); !strings.HasSuffix(got, "Fatal exception in interrupt") {
		t.Errorf("OopsReport(_, 100) does not run to the panic: %q", got)
	}
	if got := OopsReport("[ 1.0] Reached target multi-user.target\n", 10); got != "" {
		t.Errorf("a clean console has no report, got %q", got)
	}
}
