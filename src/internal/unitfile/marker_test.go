package unitfile

import "testing"

// Every file cellguard writes for systemd carries the marker that removal
// looks for.
func TestRenderedFilesCarryTheMarker(t *testing.T) {
	u, err := Render(Spec{Name: "garden", Start: []string{"/bin/true"}, Type: TypeExec, Delegate: DelegateV1, KillMode: KillModeNone})
	if err != nil {
		t.Fatal(err)
	}
	d, err := RenderSupervisorDropIn("runit.service", DelegateV1)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string][]byte{"unit": u, "drop-in": d} {
		if !WrittenByCellguard(text) {
			t.Errorf("%s lacks the marker:\n%s", name, text)
		}
	}
	if WrittenByCellguard([]byte("[Service]\nExecStart=/bin/true\n# Written by cellguard\n")) {
		t.Error("a marker that is not the first line counts")
	}
}

func TestDaemonOf(t *testing.T) {
	for name, want := range map[string]string{"cellguard-garden.service": "garden", "cellguard-worker_1.service": "worker_1"} {
		if got, ok := DaemonOf(name); !ok || got != want {
			t.Errorf("DaemonOf(%q) = %q, %v", name, got, ok)
		}
	}
	for _, name := range []string{"garden.service", "cellguard-garden.socket", "cellguard-.service", "cellguard-a b.service"} {
		if _, ok := DaemonOf(name); ok {
			t.Errorf("DaemonOf(%q) matched", name)
		}
	}
}
