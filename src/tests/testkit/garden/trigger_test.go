package garden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTriggerFor(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "tests", "bosh", "seed000-trigger.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	for _, tc := range []struct {
		systemd   int
		want, not []string
	}{
		{229, []string{"Type=simple", "CPUShares=512", "BlockIOAccounting=yes", "BlockIOWeight=500", "MemoryLimit=1G"},
			[]string{"Type=exec", "CPUWeight=", "\nIOWeight=", "MemoryMax=", "\nIOAccounting="}},
		{232, []string{"Type=simple", "CPUWeight=50", "IOWeight=50", "MemoryMax=1G"}, []string{"Type=exec", "CPUShares="}},
		{249, []string{"Type=exec", "CPUWeight=50", "IOAccounting=yes", "MemoryMax=1G"}, []string{"CPUShares=", "BlockIO"}},
		{255, []string{"Type=exec", "CPUWeight=50"}, []string{"CPUShares="}},
	} {
		got := TriggerFor(unit, tc.systemd)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("systemd %d: no %q in\n%s", tc.systemd, w, got)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("systemd %d: %q in\n%s", tc.systemd, n, got)
			}
		}
	}
	if TriggerFor(unit, 249) != unit {
		t.Error("systemd 249: the unit changed")
	}
}
