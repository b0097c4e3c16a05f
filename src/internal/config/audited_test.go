package config

import (
	"reflect"
	"testing"
)

func TestAuditedDaemons(t *testing.T) {
	garden := Daemon{Name: "garden", Start: "/bin/true", PIDFile: "/var/vcap/sys/run/garden/garden.pid"}
	worker := Daemon{Name: "worker", Start: "/bin/true"}
	for _, tc := range []struct {
		name  string
		names []string
		want  []Daemon
	}{
		{"unset: every daemon", nil, []Daemon{garden, worker}},
		{"named ones, in the list's order", []string{"worker", "garden"}, []Daemon{worker, garden}},
		{"a name no daemon has is audited by its unit", []string{"containerd"}, []Daemon{{Name: "containerd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Daemons: []Daemon{garden, worker}, Validator: Validator{Daemons: tc.names}}
			if got := c.AuditedDaemons(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("AuditedDaemons = %+v, want %+v", got, tc.want)
			}
		})
	}
}
