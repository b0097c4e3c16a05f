package config

import (
	"strings"
	"testing"
)

// Every name and path a job property sets is held to unitfile's rules, and
// the refusal names the config key, so `config check` refuses at pre-start's
// first step what `unit install` or a root shell would otherwise meet.
func TestValidateRefusesNamesAndPathsByKey(t *testing.T) {
	long := "/" + strings.Repeat("a", 256)
	testCases := []struct{ name, json, want string }{
		{"daemon name runs a command", `{"daemons":[{"name":"garden$(echo INJECTED >&2)","start":"/bin/true"}]}`, "daemons[0].name: unit: invalid daemon or unit name"},
		{"daemon name starts with -", `{"daemons":[{"name":"-g","start":"/bin/true"}]}`, "daemons[0].name: "},
		{"daemon name too long", `{"daemons":[{"name":"` + strings.Repeat("g", 65) + `","start":"/bin/true"}]}`, "daemons[0].name: "},
		{"start ends a command", `{"daemons":[{"name":"g","start":"/bin/true; touch /x"}]}`, "daemons[0].start: unit: invalid command"},
		{"start relative", `{"daemons":[{"name":"g","start":"bin/true"}]}`, "daemons[0].start: unit: invalid command: executable"},
		{"stop with a newline", `{"daemons":[{"name":"g","start":"/bin/true","stop":"/bin/true\ntouch /x"}]}`, "daemons[0].stop: "},
		{"stop only spaces", `{"daemons":[{"name":"g","start":"/bin/true","stop":"  "}]}`, "daemons[0].stop: unit: invalid command: empty"},
		{"pidfile climbs", `{"daemons":[{"name":"g","start":"/bin/true","pidfile":"/var/vcap/../etc/shadow"}]}`, "daemons[0].pidfile: unit: invalid path"},
		{"monit pidfile runs a command", `{"supervisor":{"pidfile":"/x/$(touch /y)"}}`, "supervisor.pidfile: unit: invalid path"},
		{"watch textfile ends the quote", `{"watch":{"textfile":"/tmp/x\"; echo INJECTED >&2; echo \"/cellguard_watch.prom"}}`, "watch.textfile: unit: invalid path"},
		{"drain textfile relative", `{"validator":{"prometheus_textfile":"cellguard.prom"}}`, "validator.prometheus_textfile: unit: invalid path"},
		{"advisories file with a trailing slash", `{"validator":{"advisories_file":"/etc/advisories/"}}`, "validator.advisories_file: unit: invalid path"},
		{"runtime root with a space", `{"validator":{"runtime_roots":["/run/runc","/run/x /etc"]}}`, "validator.runtime_roots[1]: unit: invalid path"},
		{"runtime binary in backticks", "{\"validator\":{\"runtime_binaries\":{\"runc\":\"/usr/bin/`touch /x`\"}}}", "validator.runtime_binaries.runc: unit: invalid path"},
		{"a name longer than NAME_MAX", `{"validator":{"prometheus_textfile":"` + long + `"}}`, "validator.prometheus_textfile: unit: invalid path"},
		{"a path longer than PATH_MAX", `{"validator":{"prometheus_textfile":"` + strings.Repeat("/abc", 1024) + `"}}`, "longer than 4095 bytes"},
		{"delegate unit runs a command", `{"delegate_units":["$(touch /x).service"]}`, "delegate_units[0]: "},
		{"cgroup root is the root", `{"validator":{"extra_cgroup_roots":["/"]}}`, "validator.extra_cgroup_roots[0]: "},
		{"cgroup root is a service", `{"validator":{"extra_cgroup_roots":["/system.slice/runit.service/"]}}`, "validator.extra_cgroup_roots[0]: "},
		{"cgroup root climbs", `{"validator":{"extra_cgroup_roots":["/garden/.."]}}`, "validator.extra_cgroup_roots[0]: "},
		{"cgroup root relative", `{"validator":{"extra_cgroup_roots":["garden"]}}`, "validator.extra_cgroup_roots[0]: "},
		{"slice holds everything", `{"validator":{"extra_cgroup_slices":["/system.slice"]}}`, "validator.extra_cgroup_slices[0]: "},
		{"delegate unit a path", `{"delegate_units":["/lib/systemd/system/concourse.service"]}`, "delegate_units[0]: "},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestValidateAcceptsPlainNamesAndPaths(t *testing.T) {
	ok := `{"daemons":[{"name":"garden_1.x-y","start":"/var/vcap/jobs/garden/bin/garden_ctl start --config=/a,b+c@d:e","stop":"/var/vcap/jobs/garden/bin/garden_ctl stop","pidfile":"/var/vcap/sys/run/garden/garden.pid","type":"forking"}],
	  "supervisor":{"pidfile":"/var/vcap/monit/monit.pid"},
	  "validator":{"prometheus_textfile":"/var/vcap/data/node_exporter/cellguard.prom","advisories_file":"","runtime_roots":["/run/containerd/runc","/"],
	               "extra_cgroup_roots":["/system.slice/runit.service/garden","/garden/./x"],"extra_cgroup_slices":["/kubepods.slice"],
	               "runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"}},
	  "watch":{"textfile":"/var/vcap/jobs/node_exporter/config/cellguard_watch.prom"},
	  "delegate_units":["concourse.service","getty@tty1.service","a\\x2db.service"]}`
	if _, err := Parse([]byte(ok), "test"); err != nil {
		t.Fatal(err)
	}
}

// The values the job template passes through type-checked (issue 24: one
// home per rule) are judged here, and the refusal names the key.
func TestValidateJudgesLogAndWatchValues(t *testing.T) {
	testCases := []struct{ name, json, want string }{
		{"time format", `{"log":{"time_format":"iso"}}`, `log.time_format: unknown log time format "iso"`},
		{"level", `{"log":{"level":"verbose"}}`, `log.level: unknown log level "verbose"`},
		{"daemon type", `{"daemons":[{"name":"g","start":"/bin/true","type":"exec; touch /x"}]}`, `type "exec; touch /x": want exec or forking`},
		{"duplicate daemon", `{"daemons":[{"name":"g","start":"/bin/true"},{"name":"g","start":"/bin/true"}]}`, `daemons[1]: duplicate name "g"`},
		{"tls without ca", `{"watch":{"tls":{"cert":"/c","key":"/k"}}}`, "watch.tls: set cert, key and ca together"},
		{"heal per minute zero", `{"watch":{"heal_per_minute":0}}`, "watch.heal_per_minute 0: must be a whole number above zero"},
		{"heal per minute negative", `{"watch":{"heal_per_minute":-1}}`, "watch.heal_per_minute -1: must not be negative"},
		{"heal per minute fraction", `{"watch":{"heal_per_minute":1.5}}`, "heal_per_minute"},
		{"listen without port", `{"watch":{"listen":"127.0.0.1"}}`, `watch.listen: "127.0.0.1": want host:port`},
		{"listen port too big", `{"watch":{"listen":"127.0.0.1:99999"}}`, `watch.listen: "127.0.0.1:99999": port "99999"`},
		{"listen port a name", `{"watch":{"listen":"localhost:http"}}`, `port "http"`},
		{"listen host with a space", `{"watch":{"listen":"local host:80"}}`, `watch.listen: "local host:80": host "local host"`},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json), "test")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	for _, ok := range []string{
		`{}`,
		`{"log":{"time_format":"rfc3339","level":"debug"},"watch":{"listen":"127.0.0.1:14875","heal_per_minute":60}}`,
		`{"log":{"time_format":"unix-epoch","level":"fatal"},"watch":{"listen":"[::1]:9323"}}`,
		`{"watch":{"listen":":14875"}}`,
	} {
		if _, err := Parse([]byte(ok), "test"); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
}
