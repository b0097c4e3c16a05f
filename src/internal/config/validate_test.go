package config

import (
	"errors"
	"strings"
	"testing"
)

// testIDs stand in for the validator's registry (the cli passes the real
// one; spec/jobs runs the real binary on rendered configs).
var testIDs = []string{"cgroup-integrity", "runtime-ghosts", "runtime-versions"}

// Every key's refusal: the problem names the key as the file spells it,
// the value, what would be accepted, and the job property an operator
// sets. Each case is one problem, so the test also proves a key is not
// reported twice.
// siteRecord is an operator's OSV record, as an OSV export carries it.
const siteRecord = `{"schema_version":"1.6.0","id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"site rule",
  "affected":[{"package":{"ecosystem":"Go","name":"github.com/opencontainers/runc"},"ranges":[{"type":"SEMVER","events":[{"introduced":"1.4.0"},{"fixed":"1.4.1"}]}]}],
  "database_specific":{"cellguard":{"class":"hazard","conditions":["cgroup_v2"]}}}`

func TestParseRefusesEachKeyByName(t *testing.T) {
	long := "/" + strings.Repeat("a", 256)
	testCases := []struct{ name, json, want string }{
		// Shape: every unknown key and wrong type, by its path.
		{"unknown key", `{"supervisor":{"protekt":true}}`, `supervisor.protekt: unknown key (known: pidfile, protect) (job property cellguard.supervisor.protekt)`},
		{"unknown daemon key", `{"daemons":[{"name":"g","start":"/bin/true","pid_file":"/x"}]}`, `daemons[0].pid_file: unknown key (known: name, pidfile, `},
		{"key in another case", `{"Supervisor":{}}`, `Supervisor: unknown key`},
		{"bool as string", `{"supervisor":{"protect":"yes"}}`, `supervisor.protect "yes": want true or false (job property cellguard.supervisor.protect)`},
		{"list as string", `{"validator":{"runtime_roots":"/run/runc"}}`, `validator.runtime_roots "/run/runc": want a list of a string`},
		{"heal per minute fraction", `{"watch":{"heal_per_minute":1.5}}`, `watch.heal_per_minute 1.5: want a whole number`},
		{"drain heal as string", `{"drain":{"heal":"yes"}}`, `drain.heal "yes": want true or false (job property cellguard.drain.heal)`},
		// Daemons: unitfile's rules, as unit install applies them.
		{"daemon name runs a command", `{"daemons":[{"name":"garden$(echo INJECTED >&2)","start":"/bin/true"}]}`, "daemons[0].name: unit: invalid daemon or unit name"},
		{"daemon name starts with -", `{"daemons":[{"name":"-g","start":"/bin/true"}]}`, "daemons[0].name: unit: invalid daemon or unit name"},
		{"daemon name too long", `{"daemons":[{"name":"` + strings.Repeat("g", 65) + `","start":"/bin/true"}]}`, "daemons[0].name: "},
		{"daemon without name", `{"daemons":[{"start":"/bin/true"}]}`, "daemons[0].name: unit: invalid daemon or unit name: empty (job property cellguard.daemons[0].name)"},
		{"daemon without start", `{"daemons":[{"name":"g"}]}`, "daemons[0].start: missing: want the absolute path of the daemon's ctl script"},
		{"start ends a command", `{"daemons":[{"name":"g","start":"/bin/true; touch /x"}]}`, "daemons[0].start: unit: invalid command"},
		{"start relative", `{"daemons":[{"name":"g","start":"bin/true"}]}`, "daemons[0].start: unit: invalid command: executable"},
		{"stop with a newline", `{"daemons":[{"name":"g","start":"/bin/true","stop":"/bin/true\ntouch /x"}]}`, "daemons[0].stop: "},
		{"stop only spaces", `{"daemons":[{"name":"g","start":"/bin/true","stop":"  "}]}`, "daemons[0].stop: unit: invalid command: empty"},
		{"pidfile climbs", `{"daemons":[{"name":"g","start":"/bin/true","pidfile":"/var/vcap/../etc/shadow"}]}`, "daemons[0].pidfile: unit: invalid path"},
		{"daemon type", `{"daemons":[{"name":"g","start":"/bin/true","type":"exec; touch /x"}]}`, `daemons[0].type "exec; touch /x": want exec or forking`},
		{"forking without pidfile", `{"daemons":[{"name":"g","start":"/bin/true","type":"forking"}]}`, `daemons[0].pidfile: missing: type forking needs`},
		{"duplicate daemon", `{"daemons":[{"name":"g","start":"/bin/true"},{"name":"g","start":"/bin/true"}]}`, `daemons[1].name "g": another daemon has this name`},
		{"daemon stop timeout zero", `{"daemons":[{"name":"g","start":"/bin/true","stop_timeout":"0ms"}]}`, `daemons[0].stop_timeout "0ms": must be above zero; leave it out for the default (job property cellguard.daemons[0].stop_timeout)`},
		{"daemon start timeout negative", `{"daemons":[{"name":"g","start":"/bin/true","start_timeout":"-5s"}]}`, `daemons[0].start_timeout "-5s": must not be negative: want Go's form`},
		// Paths, by unitfile.ValidatePath.
		{"monit pidfile runs a command", `{"supervisor":{"pidfile":"/x/$(touch /y)"}}`, "supervisor.pidfile: unit: invalid path"},
		{"watch textfile ends the quote", `{"watch":{"textfile":"/tmp/x\"; echo INJECTED >&2; echo \"/cellguard_watch.prom"}}`, "watch.textfile: unit: invalid path"},
		{"drain textfile relative", `{"validator":{"prometheus_textfile":"cellguard.prom"}}`, "validator.prometheus_textfile: unit: invalid path"},
		// Advisories: OSV records, judged by runtimever's parser.
		{"advisory not an object", `{"validator":{"advisories":["CVE-1"]}}`, "validator.advisories[0]: OSV record: "},
		{"advisory without modified", `{"validator":{"advisories":[{"id":"SITE-1","summary":"s"}]}}`, `validator.advisories[0]: advisory SITE-1: modified "": want an RFC 3339 time (OSV requires it) (job property cellguard.validator.advisories[0])`},
		{"advisory misspelt field", `{"validator":{"advisories":[{"id":"SITE-1","modified":"2026-12-06T00:00:00Z","afected":[]}]}}`, `validator.advisories[0]: OSV record: json: unknown field "afected"`},
		{"advisory of another package", `{"validator":{"advisories":[{"id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"s","affected":[{"package":{"ecosystem":"Go","name":"k8s.io/kubelet"},"ranges":[{"type":"SEMVER","events":[{"introduced":"0"}]}]}]}]}}`, "validator.advisories[0]: advisory SITE-1: affected names no package cellguard probes"},
		{"advisory with an unknown class", `{"validator":{"advisories":[{"id":"SITE-1","modified":"2026-12-06T00:00:00Z","summary":"s","affected":[],"database_specific":{"cellguard":{"class":"critical"}}}]}}`, `validator.advisories[0]: advisory SITE-1: database_specific.cellguard.class "critical": want hazard or security`},
		{"advisory listed twice", `{"validator":{"advisories":[` + siteRecord + `,` + siteRecord + `]}}`, `validator.advisories[1].id "SITE-1": want an id listed once`},
		{"promoting an unknown id", `{"validator":{"blocking_advisories":["CVE-2024-2162"]}}`, `validator.blocking_advisories[0] "CVE-2024-2162": want the id of a shipped advisory`},
		{"promoting a withdrawn id", `{"validator":{"advisories":[{"id":"CVE-2024-21626","modified":"2026-12-06T00:00:00Z","withdrawn":"2026-12-06T00:00:00Z"}],"blocking_advisories":["CVE-2024-21626"]}}`, `validator.blocking_advisories[0] "CVE-2024-21626"`},
		{"runtime root with a space", `{"validator":{"runtime_roots":["/run/runc","/run/x /etc"]}}`, "validator.runtime_roots[1]: unit: invalid path"},
		{"runtime binary in backticks", "{\"validator\":{\"runtime_binaries\":{\"runc\":\"/usr/bin/`touch /x`\"}}}", "validator.runtime_binaries.runc: unit: invalid path"},
		{"a name longer than NAME_MAX", `{"validator":{"prometheus_textfile":"` + long + `"}}`, "validator.prometheus_textfile: unit: invalid path"},
		{"a path longer than PATH_MAX", `{"validator":{"prometheus_textfile":"` + strings.Repeat("/abc", 1024) + `"}}`, "longer than 4095 bytes"},
		{"delegate unit runs a command", `{"delegate_units":["$(touch /x).service"]}`, "delegate_units[0]: unit: invalid daemon or unit name"},
		{"delegate unit a path", `{"delegate_units":["/lib/systemd/system/concourse.service"]}`, "delegate_units[0]: "},
		{"delegate unit not a service", `{"delegate_units":["concourse.scope"]}`, `delegate_units[0] "concourse.scope": not a service; want a service unit name such as concourse.service`},
		// Cgroup roots and slices.
		{"cgroup root is the root", `{"validator":{"extra_cgroup_roots":["/"]}}`, `validator.extra_cgroup_roots[0] "/": holds more than a runtime's containers`},
		{"cgroup root is a service", `{"validator":{"extra_cgroup_roots":["/system.slice/runit.service/"]}}`, "validator.extra_cgroup_roots[0] "},
		{"cgroup root climbs", `{"validator":{"extra_cgroup_roots":["/garden/.."]}}`, "validator.extra_cgroup_roots[0] "},
		{"cgroup root relative", `{"validator":{"extra_cgroup_roots":["garden"]}}`, `validator.extra_cgroup_roots[0] "garden": want an absolute cgroup path`},
		{"slice holds everything", `{"validator":{"extra_cgroup_slices":["/system.slice"]}}`, `validator.extra_cgroup_slices[0] "/system.slice": holds every other service`},
		{"slice not a slice", `{"validator":{"extra_cgroup_slices":["/garden"]}}`, `validator.extra_cgroup_slices[0] "/garden": want an absolute path ending in a slice`},
		// Log and watch.
		{"time format", `{"log":{"time_format":"iso"}}`, `log.time_format: unknown log time format "iso": want unix-epoch or rfc3339 (job property cellguard.log.time_format)`},
		{"level", `{"log":{"level":"verbose"}}`, `log.level: unknown log level "verbose"`},
		{"tls without ca", `{"watch":{"tls":{"cert":"/c","key":"/k"}}}`, "watch.tls: set cert, key and ca together (mutual TLS), or none (job property cellguard.watch.metrics.cert, .key and .ca_cert)"},
		{"heal per minute zero", `{"watch":{"heal_per_minute":0}}`, "watch.heal_per_minute 0: must be a whole number above zero; leave it out for the default"},
		{"heal per minute negative", `{"watch":{"heal_per_minute":-1}}`, "watch.heal_per_minute -1: must be a whole number above zero"},
		{"listen without port", `{"watch":{"listen":"127.0.0.1"}}`, `watch.listen "127.0.0.1": want host:port`},
		{"listen port too big", `{"watch":{"listen":"127.0.0.1:99999"}}`, `watch.listen "127.0.0.1:99999": port "99999": want 0 to 65535`},
		{"listen port a name", `{"watch":{"listen":"localhost:http"}}`, `port "http"`},
		{"listen host with a space", `{"watch":{"listen":"local host:80"}}`, `watch.listen "local host:80": host "local host"`},
		{"listen on every address without TLS", `{"watch":{"listen":":14875"}}`, `watch.listen ":14875": serves /metrics beyond this VM without TLS: keep a loopback address`},
		{"listen on the VM's address without TLS", `{"watch":{"listen":"10.0.16.5:14875"}}`, `watch.listen "10.0.16.5:14875": serves /metrics beyond this VM without TLS`},
		{"listen on a name without TLS", `{"watch":{"listen":"cell.example:14875"}}`, `watch.listen "cell.example:14875": serves /metrics beyond this VM`},
		{"textfile dir", `{"watch":{"textfile":"x/cellguard_watch.prom"}}`, `watch.textfile: unit: invalid path: "x/cellguard_watch.prom" is not absolute (job property cellguard.watch.textfile_dir)`},
		// Durations: Go's grammar, each key's range, a written zero refused.
		{"budget zero", `{"drain":{"budget":"0s"}}`, `drain.budget "0s": must be from 1s to 1h; leave it out for the default (job property cellguard.drain.budget)`},
		{"budget below 1s", `{"drain":{"budget":"500ms"}}`, `drain.budget "500ms": must be from 1s to 1h`},
		{"budget above 1h", `{"drain":{"budget":"2h"}}`, `drain.budget "2h": must be from 1s to 1h`},
		{"budget without a unit", `{"drain":{"budget":"60"}}`, `drain.budget "60": time: missing unit in duration "60": want Go's form such as "90s" or "1m30s", from 1s to 1h`},
		{"budget a number of seconds too small", `{"drain":{"budget":0.5}}`, `drain.budget 0.5: must be from 1s to 1h`},
		{"validator budget above 1h", `{"validator":{"budget":"61m"}}`, `validator.budget "61m": must be from 1s to 1h; leave it out for the default (job property cellguard.validator.budget)`},
		{"runc init age zero", `{"validator":{"runc_init_max_age":"0s"}}`, `validator.runc_init_max_age "0s": must be above zero`},
		{"probe timeout zero", `{"validator":{"probe_timeout":"0s"}}`, `validator.probe_timeout "0s": must be from 1s to 5m; leave it out for the default (job property cellguard.validator.probe_timeout)`},
		{"probe timeout below 1s", `{"validator":{"probe_timeout":"200ms"}}`, `validator.probe_timeout "200ms": must be from 1s to 5m`},
		{"probe timeout above 5m", `{"validator":{"probe_timeout":"10m"}}`, `validator.probe_timeout "10m": must be from 1s to 5m`},
		{"runc init age overflows", `{"validator":{"runc_init_max_age":"2562048h"}}`, `validator.runc_init_max_age "2562048h": time: invalid duration`},
		{"watch period zero", `{"watch":{"period":"0"}}`, `watch.period "0": must be above zero`},
		{"duration an object", `{"watch":{"period":{}}}`, `watch.period {}: not a string such as "90s" nor a number of seconds`},
		// Check ids, against the registry.
		{"unknown ignored id", `{"validator":{"ignore":["ghosts"]}}`, `validator.ignore "ghosts": unknown check id; want one of cgroup-integrity, runtime-ghosts, runtime-versions, or "all" for every check`},
		{"unknown id after a comma", `{"validator":{"ignore":["runtime-ghosts, ghosts"]}}`, `validator.ignore "ghosts": unknown check id`},
		{"unknown drain blocking id", `{"validator":{"blocking":{"drain":["cgroup-integrty"]}}}`, `validator.blocking.drain "cgroup-integrty": unknown check id; want one of cgroup-integrity, runtime-ghosts, runtime-versions (job property cellguard.validator.blocking.drain)`},
		{"unknown pre-start blocking id", `{"validator":{"blocking":{"pre-start":["no-such-check"]}}}`, `validator.blocking.pre-start "no-such-check": unknown check id; want one of cgroup-integrity, runtime-ghosts, runtime-versions (job property cellguard.validator.blocking.pre_start)`},
		{"all is no blocking id", `{"validator":{"blocking":{"drain":["all"]}}}`, `validator.blocking.drain "all": unknown check id`},
		{"unknown phase", `{"validator":{"blocking":{"prestart":["runtime-ghosts"]}}}`, `validator.blocking.prestart: unknown phase; want pre-start or drain`},
		// Sysctls, as sysctl apply resolves them.
		{"unknown profile", `{"sysctl":{"profile":"k8s"}}`, `sysctl.profile: unknown sysctl profile "k8s": want container-host or none (job property cellguard.sysctl.profile)`},
		{"bad floor", `{"sysctl":{"set":{"kernel.pid_max":">=lots"}}}`, `sysctl.set.kernel.pid_max: set: kernel.pid_max: ">=lots": a floor must be a decimal number`},
		{"removing a key not in the profile", `{"sysctl":{"remove":["kernel.nope"]}}`, `sysctl.remove[0]: remove "kernel.nope": not in profile container-host (job property cellguard.sysctl.remove[0])`},
		{"set and removed", `{"sysctl":{"set":{"kernel.pid_max":"4194304"},"remove":["kernel.pid_max"]}}`, `sysctl: `},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.json), "test.json", testIDs)
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("Parse: %v, want an *Error containing %q", err, tc.want)
			}
			if len(cerr.Problems) != 1 || !strings.Contains(cerr.Problems[0].String(), tc.want) {
				t.Fatalf("Parse: %d problems:\n%v\nwant one containing %q", len(cerr.Problems), err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "config test.json: ") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// One file with a problem in every section: every one is named, each
// once, in one error, where encoding/json and the old Validate stopped at
// the first.
func TestParseNamesEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte(`{"daemons":[{"name":"garden"},{"name":"garden","start":"/x","stop_timeout":"0s"}],
	  "log":{"level":"verbose","colour":true},
	  "supervisor":{"protect":"yes"},
	  "sysctl":{"profile":"k8s"},
	  "validator":{"ignore":["ghosts"],"blocking":{"drain":["cgroup-integrty"]},"budget":"60","runtime_roots":["run/runc"]},
	  "watch":{"listen":"0.0.0.0:14875","heal_per_minute":0},
	  "drain":{"budget":"0s"}}`), "cellguard.json", testIDs)
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("Parse: %v, want an *Error", err)
	}
	keys := []string{"daemons[0].start", "daemons[1].name", "daemons[1].stop_timeout", "log.level", "log.colour", "supervisor.protect",
		"sysctl.profile", "validator.ignore", "validator.blocking.drain", "validator.budget", "validator.runtime_roots[0]",
		"watch.listen", "watch.heal_per_minute", "drain.budget"}
	got := map[string]int{}
	for _, p := range cerr.Problems {
		got[p.Key]++
	}
	for _, k := range keys {
		if got[k] != 1 {
			t.Errorf("%s reported %d times, want once", k, got[k])
		}
	}
	if len(cerr.Problems) != len(keys) {
		t.Errorf("%d problems, want %d:\n%v", len(cerr.Problems), len(keys), err)
	}
	if lines := strings.Split(err.Error(), "\n"); len(lines) != len(keys) {
		t.Errorf("Error() has %d lines, want one a problem", len(lines))
	}
}

// What is not JSON has nothing to judge: one error, from the decoder.
func TestParseStopsOnlyOnWhatIsNotJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"drain":`:  "parse config test.json: unexpected EOF",
		`{} {}`:      "trailing data",
		`{"a":1,}`:   "parse config test.json: invalid character",
		`[1, "two"]`: `config test.json: the file [1,"two"]: want an object`,
	} {
		_, err := Parse([]byte(in), "test.json", testIDs)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%s) = %v, want %q", in, err, want)
		}
	}
}

func TestParseAcceptsPlainNamesPathsAndValues(t *testing.T) {
	for _, ok := range []string{
		`{}`,
		`null`,
		`{"daemons":[{"name":"garden_1.x-y","start":"/var/vcap/jobs/garden/bin/garden_ctl start --config=/a,b+c@d:e","stop":"/var/vcap/jobs/garden/bin/garden_ctl stop","pidfile":"/var/vcap/sys/run/garden/garden.pid","type":"forking","start_timeout":"30s","stop_timeout":45}],
		  "supervisor":{"pidfile":"/var/vcap/monit/monit.pid"},
		  "validator":{"prometheus_textfile":"/var/vcap/data/node_exporter/cellguard.prom","runtime_roots":["/run/containerd/runc","/"],
		               "extra_cgroup_roots":["/system.slice/runit.service/garden","/garden/./x"],"extra_cgroup_slices":["/kubepods.slice"],
		               "runtime_binaries":{"runc":"/var/vcap/packages/runc/bin/runc"},"ignore":["all"],"blocking":{"drain":["cgroup-integrity"],"pre-start":[]},
		               "budget":"1h","runc_init_max_age":"1m30s","probe_timeout":"1m"},
		  "watch":{"textfile":"/var/vcap/jobs/node_exporter/config/cellguard_watch.prom","period":"","heal_per_minute":null},
		  "drain":{"budget":"1s","heal":true},
		  "sysctl":{"profile":"container-host","set":{"kernel.pid_max":">=4194304"},"remove":["fs.pipe-user-pages-soft"]},
		  "delegate_units":["concourse.service","getty@tty1.service","a\\x2db.service"]}`,
		`{"log":{"time_format":"rfc3339","level":"debug"},"watch":{"listen":"127.0.0.1:14875","heal_per_minute":60}}`,
		`{"log":{"time_format":"unix-epoch","level":"fatal"},"watch":{"listen":"[::1]:9323"}}`,
		`{"watch":{"listen":"localhost:14875"}}`,
		// an operator's record, promoted, and a shipped id promoted
		`{"validator":{"advisories":[` + siteRecord + `],"blocking_advisories":["SITE-1","CVE-2024-21626"]}}`,
		`{"watch":{"listen":"127.0.0.2:14875"}}`,
		// Beyond the VM with mutual TLS.
		`{"watch":{"listen":"0.0.0.0:14875","tls":{"cert":"/c","key":"/k","ca":"/a"}}}`,
		`{"watch":{"listen":"10.0.16.5:14875","tls":{"cert":"/c","key":"/k","ca":"/a"}}}`,
	} {
		if _, err := Parse([]byte(ok), "test.json", testIDs); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
}

// The job property behind a key: "cellguard." and the key, but for the
// template's renames (spec/jobs' configKey and renderedElsewhere).
func TestPropertyNamesWhatOperatorsSet(t *testing.T) {
	for key, want := range map[string]string{
		"drain.budget":                     "cellguard.drain.budget",
		"daemons[0].stop_timeout":          "cellguard.daemons[0].stop_timeout",
		"validator.blocking.pre-start":     "cellguard.validator.blocking.pre_start",
		"validator.blocking.drain":         "cellguard.validator.blocking.drain",
		"watch.textfile":                   "cellguard.watch.textfile_dir",
		"watch.tls":                        "cellguard.watch.metrics.cert, .key and .ca_cert",
		"watch.tls.ca":                     "cellguard.watch.metrics.ca_cert",
		"watch.tls.cert":                   "cellguard.watch.metrics.cert",
		"validator.runtime_binaries.runc":  "cellguard.validator.runtime_binaries.runc",
		"sysctl.set.kernel.pid_max":        "cellguard.sysctl.set.kernel.pid_max",
		"log.file":                         "",
		"validator.daemons[0]":             "cellguard.daemons (their names)",
		"validator.extra_cgroup_slices[0]": "cellguard.validator.extra_cgroup_slices[0]",
	} {
		if got := Property(key); got != want {
			t.Errorf("Property(%q) = %q, want %q", key, got, want)
		}
	}
}

// A config built in code (watch's flags) is judged as a file is.
func TestValidateJudgesAConfigBuiltInCode(t *testing.T) {
	c := &Config{Watch: Watch{Listen: "0.0.0.0:9323"}}
	c.Watch.Period.Duration = -1
	err := c.Validate(nil)
	if err == nil || !strings.Contains(err.Error(), `config: watch.listen "0.0.0.0:9323": serves /metrics beyond this VM without TLS`) ||
		!strings.Contains(err.Error(), `config: watch.period "-1ns": must be above zero`) {
		t.Fatalf("Validate = %v", err)
	}
	c.Watch.Listen, c.Watch.Period.Duration = "127.0.0.1:9323", 0
	if err := c.Validate(nil); err != nil {
		t.Fatalf("Validate = %v", err)
	}
}

// drain.heal reaches the config as written; left out (a config an older
// release rendered, or one written by hand) it is off, today's drain.
func TestDrainHealIsReadAsWritten(t *testing.T) {
	for _, tc := range []struct {
		json string
		want bool
	}{
		{`{"drain":{"heal":true}}`, true},
		{`{"drain":{"heal":false}}`, false},
		{`{"drain":{"budget":"60s"}}`, false},
	} {
		c, err := Parse([]byte(tc.json), "test.json", testIDs)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.json, err)
		}
		if c.Drain.Heal != tc.want {
			t.Errorf("Parse(%s): drain.heal %v, want %v", tc.json, c.Drain.Heal, tc.want)
		}
	}
}
