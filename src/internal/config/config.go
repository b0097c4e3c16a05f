// Package config loads and judges the JSON file the BOSH job renders
// (jobs/cellguard/templates/config/cellguard.json.erb). It is the one judge
// of the file's values: Load returns a config every subcommand may act on,
// or every problem, each naming its key and the job property behind it.
// The template only passes values through, plus the few refusals that must
// happen at render time (it says which). Every section is optional so each
// subcommand can run from flags alone.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/cloudfoundry/cellguard/src/internal/safefile"
)

// Config is the whole file.
type Config struct {
	Log        Log        `json:"log"`
	Daemons    []Daemon   `json:"daemons"`
	Supervisor Supervisor `json:"supervisor"`
	Sysctl     Sysctl     `json:"sysctl"`
	Validator  Validator  `json:"validator"`
	Watch      Watch      `json:"watch"`
	Drain      Drain      `json:"drain"`
	// DelegateUnits are services other releases install that get the
	// supervisor's delegation drop-in in place (Concourse's
	// concourse.service), and that delegation-audit reads.
	DelegateUnits []string `json:"delegate_units"`
}

// Log mirrors the common --log-* flags.
type Log struct {
	File       string `json:"file"`
	TimeFormat string `json:"time_format"` // unix-epoch | rfc3339
	Level      string `json:"level"`
}

// Daemon is a monit-managed daemon that gets a delegated unit.
type Daemon struct {
	Name    string `json:"name"`
	Start   string `json:"start"`   // absolute path + args, e.g. "/var/vcap/jobs/garden/bin/garden_ctl start"
	Stop    string `json:"stop"`    // may be empty: then stop signals the main process
	PIDFile string `json:"pidfile"` // what monit watches
	// Type is "exec" (the ctl script execs the daemon) or "forking" (it
	// backgrounds the daemon and exits; PIDFile required).
	Type         string   `json:"type"`
	StartTimeout Duration `json:"start_timeout"`
	StopTimeout  Duration `json:"stop_timeout"`
	Runtime      bool     `json:"runtime"` // install under /run/systemd/system
}

// Supervisor controls protect-supervisor.
type Supervisor struct {
	Protect bool `json:"protect"`
	// PIDFile of the supervisor process (monit); default /var/vcap/monit/monit.pid
	// is not assumed: empty means find monit by process name.
	PIDFile string `json:"pidfile"`
}

// Sysctl configures `cellguard sysctl apply|check`.
type Sysctl struct {
	Profile string            `json:"profile"` // "container-host" or "none"
	Set     map[string]string `json:"set"`     // overrides and additions; ">=N" is a floor, else exact
	Remove  []string          `json:"remove"`  // keys dropped from the profile
	File    string            `json:"file"`    // persisted file, default /etc/sysctl.d/60-cellguard.conf
}

// Validator configures `cellguard validate`.
type Validator struct {
	RuntimeRoots    []string          `json:"runtime_roots"`
	Namespaces      []string          `json:"namespaces"`
	RuntimeBinaries map[string]string `json:"runtime_binaries"` // e.g. {"runc": "/var/vcap/packages/runc/bin/runc"}
	Ignore          []string          `json:"ignore"`
	// Blocking lists, per phase ("pre-start", "drain"), the check ids whose
	// failures block; an absent phase means each check's default severity.
	Blocking       map[string][]string `json:"blocking"`
	Fix            bool                `json:"fix"`
	PrometheusFile string              `json:"prometheus_textfile"`
	RuncInitMaxAge Duration            `json:"runc_init_max_age"`
	// ProbeTimeout bounds each exec of runtime-versions' probes (`runc
	// --version`); 0 means boundedexec's default. See probeRule.
	ProbeTimeout Duration `json:"probe_timeout"`
	Daemons      []string `json:"daemons"` // daemon names whose units are audited
	// Advisories are the operator's advisories, OSV records as the
	// shipped ones (runtimever): added, or replacing a shipped record of
	// the same id ("withdrawn" set removes it). Load parses them
	// (OperatorAdvisories).
	Advisories []OSVRecord `json:"advisories"`
	// BlockingAdvisories are advisory ids whose match blocks pre-start
	// like a hazard's (security advisories only report by default).
	BlockingAdvisories []string `json:"blocking_advisories"`
	ExtraCgroupRoots   []string `json:"extra_cgroup_roots"`
	// ExtraCgroupSlices are systemd slices that hold only containers
	// (kubelet's /kubepods.slice with the systemd cgroup driver), searched
	// for orphans like ExtraCgroupRoots: slices only where the operator
	// names them, since most slices hold everything else.
	ExtraCgroupSlices []string `json:"extra_cgroup_slices"`
	// Budget bounds the validation of `cellguard validate` (pre-start, the
	// errand) as drain.budget bounds drain's: the checks that did not
	// finish are reported and never block; a finished blocking check still
	// blocks. 0 means cellguard's default.
	Budget Duration `json:"budget"`
	// NetnsProbe lets leaked-netns touch other processes to ask their
	// sockets' namespaces (BPF task_file iterator, pidfd_getfd from their
	// cgroups); off, it judges what /proc shows (docs/validator.md).
	NetnsProbe bool `json:"netns_probe"`
	// BPFStatIterator reads every process's stat from one BPF task
	// iterator (a read-only program, loaded for the scan) instead of each
	// /proc/PID/stat. Off by default, in the job too (2302ac8: it saves CPU
	// only on hosts of tens of thousands of processes).
	BPFStatIterator bool `json:"bpf_stat_iterator"`
}

// Watch configures `cellguard watch`; the checks read Validator's settings.
type Watch struct {
	Listen        string   `json:"listen"`                    // /metrics address, e.g. "127.0.0.1:9323"; empty: none
	Heal          bool     `json:"heal"`                      // move escaped processes back
	HealPerMinute *int     `json:"heal_per_minute,omitempty"` // heal budget; nil (omitted): the default
	Period        Duration `json:"period"`                    // full scan period; 0: the default
	Textfile      string   `json:"textfile"`                  // node_exporter textfile path; empty: none
	TLS           TLSFiles `json:"tls"`                       // all three set: mutual TLS on /metrics
}

// TLSFiles are PEM file paths.
type TLSFiles struct {
	Cert string `json:"cert"`
	Key  string `json:"key"`
	CA   string `json:"ca"`
}

// Drain configures `cellguard drain`, the job's bin/drain.
type Drain struct {
	// Budget bounds the validation a drain runs; on expiry it reports
	// what finished and lets the VM go. 0 means cellguard's default.
	Budget Duration `json:"budget"`
	// BlockOnShutdown makes a blocking finding block job_shutdown (stop,
	// recreate, delete, scale-in) as well as an update.
	BlockOnShutdown bool `json:"block_on_shutdown"`
	// Heal moves the escapes drain confirmed back before it decides, at
	// most Watch.HealPerMinute processes, and blocks only on those it
	// could not move. The job's default is on; a config without the key
	// (an older release's, or one written by hand) keeps it off.
	Heal bool `json:"heal"`
}

// ErrUntrusted means the config file could be changed by someone other than
// root: cellguard runs as root and the config decides what it writes, which
// checks block a deploy and which are ignored.
var ErrUntrusted = safefile.ErrUntrusted

// Load reads and judges a config file: it returns a config every
// subcommand may act on, or an *Error naming every problem (when the file
// could be read and is JSON). checkIDs are the validator's check ids,
// which validator.ignore and validator.blocking must name (config cannot
// list them itself: the registry is built from the checks). Unknown keys
// are an error: a typo in a job property must not silently disable a
// protection. The file must be writable by root alone, and it is read
// through the descriptor that check opened (safefile.OpenTrusted).
func Load(path string, checkIDs []string) (*Config, error) {
	f, err := safefile.OpenTrusted(path)
	if errors.Is(err, safefile.ErrUntrusted) {
		return nil, fmt.Errorf("config: %w", err)
	} else if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return Parse(b, path, checkIDs)
}

// Parse decodes and judges config bytes, as Load; name is used in errors.
// Only a file that is not JSON stops it at once; otherwise every key is
// judged and every problem returned.
func Parse(b []byte, name string, checkIDs []string) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parse config %s: trailing data after the JSON object", name)
	}
	var ps problems
	ps.judgeShape(raw, reflect.TypeOf(Config{}), "")
	var c Config
	// A value judgeShape refused is left at its zero by encoding/json,
	// which goes on decoding the rest; its error is the one judgeShape
	// already named.
	if err := json.Unmarshal(b, &c); err != nil && len(ps) == 0 {
		ps.add("", "", "%v", err)
	}
	// A key refused for its shape holds no value to judge.
	shaped := map[string]bool{}
	for _, p := range ps {
		shaped[p.Key] = true
	}
	for _, p := range c.problems(checkIDs) {
		if !shaped[p.Key] {
			ps = append(ps, p)
		}
	}
	if len(ps) > 0 {
		return nil, &Error{File: name, Problems: ps}
	}
	return &c, nil
}

// Daemon returns the daemon named name.
func (c *Config) Daemon(name string) (Daemon, bool) {
	for _, d := range c.Daemons {
		if d.Name == name {
			return d, true
		}
	}
	return Daemon{}, false
}

// AuditedDaemons are the daemons delegation-audit reads: those
// validator.daemons names, or every configured daemon when it is unset. A
// name no daemon has is audited by its unit alone (no pidfile).
func (c *Config) AuditedDaemons() []Daemon {
	if len(c.Validator.Daemons) == 0 {
		return c.Daemons
	}
	out := make([]Daemon, 0, len(c.Validator.Daemons))
	for _, n := range c.Validator.Daemons {
		d, ok := c.Daemon(n)
		if !ok {
			d = Daemon{Name: n}
		}
		out = append(out, d)
	}
	return out
}
