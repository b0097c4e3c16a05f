package unitfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
)

// testdata/v0_* are what cellguard wrote before go-systemd's unit package
// rendered its files (fmt, until 2026-12).

// TestRenderMatchesEarlierOptions: the unit text changed once (comments
// moved to the header), but systemd reads the same options in the same
// order, so the one rewrite and Reload on upgrade changes nothing about
// the unit; the drop-in is byte for byte the same, so protect-supervisor
// writes and reloads nothing on upgrade.
func TestRenderMatchesEarlierOptions(t *testing.T) {
	forking := goodSpec()
	forking.Type, forking.Stop, forking.KillMode, forking.Delegate = TypeForking, nil, KillModeProcess, DelegateV2
	forking.TimeoutStartSec, forking.TimeoutStopSec = 30, 45
	for _, tc := range []struct {
		file string
		spec Spec
	}{
		{"v0_garden.service", goodSpec()},
		{"v0_forking.service", forking},
	} {
		t.Run(tc.file, func(t *testing.T) {
			old := readTestdata(t, tc.file)
			text, err := Render(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(text, old) {
				t.Fatal("the text is unchanged: drop this test's one-time-rewrite story")
			}
			if a, b := options(t, old), options(t, text); !unit.AllMatch(a, b) || len(a) != len(b) {
				t.Fatalf("options differ from the earlier file:\n%s\nnow:\n%s", old, text)
			}
		})
	}
	text, err := RenderSupervisorDropIn("runit.service", DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	if old := readTestdata(t, "v0_runit_dropin.conf"); !bytes.Equal(text, old) {
		t.Fatalf("the drop-in changed:\n%s\nwas:\n%s", text, old)
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func options(t *testing.T, text []byte) []*unit.UnitOption {
	t.Helper()
	opts, err := unit.DeserializeOptions(bytes.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

func TestSetting(t *testing.T) {
	text := []byte("[Unit]\nDescription=x\n\n[Service]\n# KillMode=none\nKillMode=none\nExecStart=/bin/true \\\n  arg\nKillMode=process\n\n[Install]\nKillMode=mixed\n")
	for _, tc := range []struct {
		section, name, want string
		ok                  bool
	}{
		{"Service", "KillMode", "process", true}, // the last assignment wins, past a continued line; comments and other sections do not count
		{"Service", "Delegate", "", false},
		{"Unit", "Description", "x", true},
	} {
		got, ok, err := Setting(text, tc.section, tc.name)
		if err != nil || got != tc.want || ok != tc.ok {
			t.Errorf("Setting(%s, %s) = %q, %v, %v; want %q, %v", tc.section, tc.name, got, ok, err, tc.want, tc.ok)
		}
	}
	if _, ok, _ := Setting([]byte("[Service]\nKillMode=none\nKillMode=\n"), "Service", "KillMode"); ok {
		t.Error("an empty assignment resets the setting")
	}
}
