package facts

import (
	"reflect"
	"testing"
)

func TestCgroupUnits(t *testing.T) {
	testCases := []struct {
		path string
		want []string
	}{
		{"/system.slice/runit.service/garden/c1", []string{"system.slice", "runit.service"}},
		{"/garden/c1", nil},
		{"/", nil},
		{"/system.slice/system-garden.slice/garden-c1.scope", []string{"system.slice", "system-garden.slice", "garden-c1.scope"}},
		// Below a service the names belong to whoever it delegated to.
		{"/user.slice/user-1000.slice/user@1000.service/app.slice/x.service", []string{"user.slice", "user-1000.slice", "user@1000.service"}},
		{"/system.slice/monit.service/garden.service/garden/c1", []string{"system.slice", "monit.service"}},
		{"/system.slice/garden/c1", []string{"system.slice"}},
		// systemd's cg_escape prefixes "_".
		{"/system.slice/_cpu.service/garden/c1", []string{"system.slice", "cpu.service"}},
		// A bare suffix is not a unit name.
		{"/.service/c1", nil},
	}
	for _, tc := range testCases {
		t.Run(tc.path, func(t *testing.T) {
			if got := CgroupUnits(tc.path); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("CgroupUnits(%q) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
