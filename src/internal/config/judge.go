package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/logging"
	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
	"github.com/cloudfoundry/cellguard/src/internal/unitfile"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// Validate judges a config built in code (watch's flags over its section)
// as Load judges a file: nil, or an *Error with every problem. checkIDs
// are the ids validator.ignore and validator.blocking may name.
func (c *Config) Validate(checkIDs []string) error {
	if ps := c.problems(checkIDs); len(ps) > 0 {
		return &Error{Problems: ps}
	}
	return nil
}

// problems runs every judge of the values, as runc's validator runs its
// list of checks, but collecting: an operator fixes every property in one
// deploy. Each judge names the key it refuses, the value and what would
// be accepted, by the rule the code that acts on the value applies
// (unitfile's for names and paths, logging's, sysctl's, the validator's
// check ids), so nothing is judged twice.
func (c *Config) problems(checkIDs []string) []Problem {
	var ps problems
	c.judgeDaemons(&ps)
	c.judgeLog(&ps)
	c.judgeWatch(&ps)
	for i, u := range c.DelegateUnits {
		ps.judgeDelegateUnit(fmt.Sprintf("delegate_units[%d]", i), u)
	}
	c.judgePaths(&ps)
	c.judgeCgroups(&ps)
	ps.judgeDuration("validator.runc_init_max_age", c.Validator.RuncInitMaxAge, anyPositive)
	ps.judgeDuration("validator.probe_timeout", c.Validator.ProbeTimeout, probeRule)
	ps.judgeDuration("validator.budget", c.Validator.Budget, budgetRule)
	ps.judgeDuration("drain.budget", c.Drain.Budget, budgetRule)
	c.judgeCheckIDs(&ps, checkIDs)
	c.judgeSysctl(&ps)
	c.judgeAdvisories(&ps)
	return ps
}

// judgeDaemons holds a daemon's name, commands and pidfile to the rules
// `cellguard unit install` applies (unitfile). The job template refuses
// the same names and paths at render time, as they reach pre-start's
// shell (spec/jobs' hostile-property test proves the two agree).
func (c *Config) judgeDaemons(ps *problems) {
	seen := map[string]bool{}
	for i, d := range c.Daemons {
		key := fmt.Sprintf("daemons[%d]", i)
		if err := unitfile.ValidateName(d.Name); err != nil {
			ps.addErr(key+".name", err)
		} else if seen[d.Name] {
			ps.add(key+".name", quote(d.Name), "another daemon has this name; each needs its own (it names cellguard-NAME.service)")
		}
		seen[d.Name] = true
		if d.Start == "" {
			ps.add(key+".start", "", "missing: want the absolute path of the daemon's ctl script and its arguments")
		} else if _, err := unitfile.SplitCommand(d.Start); err != nil {
			ps.addErr(key+".start", err)
		}
		if d.Stop != "" {
			if _, err := unitfile.SplitCommand(d.Stop); err != nil {
				ps.addErr(key+".stop", err)
			}
		}
		if d.PIDFile != "" {
			if err := unitfile.ValidatePath(d.PIDFile); err != nil {
				ps.addErr(key+".pidfile", err)
			}
		}
		switch d.Type {
		case "", "exec", "forking":
		default:
			ps.add(key+".type", quote(d.Type), "want exec or forking")
		}
		if d.Type == "forking" && d.PIDFile == "" {
			ps.add(key+".pidfile", "", "missing: type forking needs the pidfile the daemon writes")
		}
		ps.judgeDuration(key+".start_timeout", d.StartTimeout, anyPositive)
		ps.judgeDuration(key+".stop_timeout", d.StopTimeout, anyPositive)
	}
}

// judgeLog: the log's enums, by the rules the logger applies.
func (c *Config) judgeLog(ps *problems) {
	if err := logging.CheckTimeFormat(c.Log.TimeFormat); err != nil {
		ps.addErr("log.time_format", err)
	}
	if _, err := logging.ParseLevel(c.Log.Level); err != nil {
		ps.addErr("log.level", err)
	}
}

// judgeWatch: the /metrics listener and the heal budget, by the rules
// watch applies when it binds and heals.
func (c *Config) judgeWatch(ps *problems) {
	w := c.Watch
	t := w.TLS
	tls := t.Cert != "" && t.Key != "" && t.CA != ""
	if !tls && (t.Cert != "" || t.Key != "" || t.CA != "") {
		ps.add("watch.tls", "", "set cert, key and ca together (mutual TLS), or none")
	}
	// A pointer, because a written 0 must not pass for an omitted key (the
	// default): the job's schema says minimum 1.
	if n := w.HealPerMinute; n != nil && *n <= 0 {
		ps.add("watch.heal_per_minute", strconv.Itoa(*n), "must be a whole number above zero; leave it out for the default")
	}
	ps.judgeDuration("watch.period", w.Period, anyPositive)
	host, err := splitListen(w.Listen)
	switch {
	case err != nil:
		ps.add("watch.listen", quote(w.Listen), "%v", err)
	case w.Listen != "" && !tls && !loopback(host):
		// The job has the TLS properties (mutual TLS with CF's
		// metric_scraper_ca); without them /metrics would be plain HTTP to
		// whoever reaches the VM.
		ps.add("watch.listen", quote(w.Listen), "serves /metrics beyond this VM without TLS: keep a loopback address such as "+
			"127.0.0.1:14875 (the default; the prom scraper or node_exporter's textfile on the VM carries the metrics on), or set "+
			"cellguard.watch.metrics.cert, .key and .ca_cert for mutual TLS")
	}
}

// splitListen: empty (no /metrics), or host:port with a port of 0 to
// 65535 and a host of letters, digits, '.', '-' or a bracketed IPv6
// address, so a typo is refused at pre-start rather than when watch binds.
func splitListen(l string) (string, error) {
	if l == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(l)
	if err != nil {
		return "", fmt.Errorf("want host:port such as 127.0.0.1:14875: %w", err)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || strings.TrimLeft(port, "0123456789") != "" {
		return "", fmt.Errorf("port %q: want 0 to 65535", port)
	}
	if strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:") != "" ||
		(strings.Contains(host, ":") && !strings.HasPrefix(l, "[")) {
		return "", fmt.Errorf("host %q: want a name, an IPv4 address or a bracketed IPv6 address", host)
	}
	return host, nil
}

// loopback: an address only this VM reaches. Any other name may resolve
// to an address of the VM, and an empty host is every address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// judgeDelegateUnit: a service other releases install (concourse.service).
func (ps *problems) judgeDelegateUnit(key, u string) {
	const want = "want a service unit name such as concourse.service"
	if err := unitfile.ValidateUnitName(u); err != nil {
		ps.add(key, "", "%v; %s", err, want)
	} else if !strings.HasSuffix(u, ".service") {
		ps.add(key, quote(u), "not a service; %s", want)
	}
}

// judgePaths holds every other path a job property sets to
// unitfile.ValidatePath: absolute, clean, safe characters. cellguard reads
// or writes each as root, and bin/pre-start and bin/drain pass some to a
// shell; the template quotes them, and this keeps a path that is not a
// plain path from being acted on at all.
func (c *Config) judgePaths(ps *problems) {
	paths := [][2]string{
		{"supervisor.pidfile", c.Supervisor.PIDFile},
		{"watch.textfile", c.Watch.Textfile},
		{"validator.prometheus_textfile", c.Validator.PrometheusFile},
	}
	for i, r := range c.Validator.RuntimeRoots {
		paths = append(paths, [2]string{fmt.Sprintf("validator.runtime_roots[%d]", i), r})
	}
	for _, comp := range sortedKeys(c.Validator.RuntimeBinaries) {
		paths = append(paths, [2]string{"validator.runtime_binaries." + comp, c.Validator.RuntimeBinaries[comp]})
	}
	for _, p := range paths {
		if p[1] == "" {
			continue // unset: the feature is off or its default applies
		}
		if err := unitfile.ValidatePath(p[1]); err != nil {
			ps.addErr(p[0], err)
		}
	}
}

// judgeCgroups: the extra cgroup roots and slices runtime-ghosts searches
// for orphans hold only containers, or every other process there would
// be one.
func (c *Config) judgeCgroups(ps *problems) {
	for i, r := range c.Validator.ExtraCgroupRoots {
		if want := cgroupRootProblem(r); want != "" {
			ps.add(fmt.Sprintf("validator.extra_cgroup_roots[%d]", i), quote(r), "%s", want)
		}
	}
	for i, s := range c.Validator.ExtraCgroupSlices {
		key := fmt.Sprintf("validator.extra_cgroup_slices[%d]", i)
		switch {
		case !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, ".slice"):
			ps.add(key, quote(s), "want an absolute path ending in a slice, such as /kubepods.slice")
		case s == "/-.slice" || s == "/system.slice" || s == "/user.slice" || s == "/machine.slice":
			ps.add(key, quote(s), "holds every other service, user session or machine (each would be an orphan); name a slice that holds only containers")
		}
	}
}

// cgroupRootProblem: an absolute cgroup path that is not "/" nor a
// systemd slice, service or scope, which hold unrelated processes.
func cgroupRootProblem(r string) string {
	if !strings.HasPrefix(r, "/") {
		return "want an absolute cgroup path such as /system.slice/runit.service/garden"
	}
	base := ""
	for _, e := range strings.Split(r, "/") {
		if e != "" && e != "." {
			base = e
		}
	}
	if base == "" || base == ".." || strings.HasSuffix(base, ".slice") || strings.HasSuffix(base, ".service") || strings.HasSuffix(base, ".scope") {
		return "holds more than a runtime's containers (every other process there would be an orphan); name the runtime's own parent cgroup"
	}
	return ""
}

// judgeCheckIDs: every id validator.ignore and validator.blocking.<phase>
// name is a check the validator has, so a typo cannot leave a check
// blocking, or not, against the operator's intent. The lists take
// comma-separated ids too, as the --ignore flag does.
func (c *Config) judgeCheckIDs(ps *problems, checkIDs []string) {
	known := func(allowAll bool) string {
		s := strings.Join(checkIDs, ", ")
		if allowAll {
			s += fmt.Sprintf(", or %q for every check", validator.IgnoreAll)
		}
		return s
	}
	judge := func(key string, list []string, allowAll bool) {
		for _, entry := range list {
			for _, id := range strings.Split(entry, ",") {
				id = strings.TrimSpace(id)
				if id == "" || slices.Contains(checkIDs, id) || allowAll && id == validator.IgnoreAll {
					continue
				}
				ps.add(key, quote(id), "unknown check id; want one of %s", known(allowAll))
			}
		}
	}
	judge("validator.ignore", c.Validator.Ignore, true)
	for _, phase := range sortedKeys(c.Validator.Blocking) {
		key := "validator.blocking." + phase
		switch validator.Phase(phase) {
		case validator.PreStart, validator.Drain:
			judge(key, c.Validator.Blocking[phase], false)
		default:
			ps.add(key, "", "unknown phase; want %s or %s", validator.PreStart, validator.Drain)
		}
	}
}

// judgeSysctl resolves the sysctl section as `sysctl apply` would, each
// entry alone first, so each problem is named by its key; then whole, for
// what only entries together get wrong (a key set and removed).
func (c *Config) judgeSysctl(ps *problems) {
	s := c.Sysctl.Settings()
	resolve := func(key string, s sysctl.Settings) bool {
		if _, err := sysctl.Resolve(s); err != nil {
			ps.add(key, "", "%s", strings.TrimPrefix(err.Error(), "sysctl config: "))
			return false
		}
		return true
	}
	if !resolve("sysctl.profile", sysctl.Settings{Profile: s.Profile}) {
		return // every entry would say so again
	}
	if s.File != "" && !resolve("sysctl.file", sysctl.Settings{Profile: s.Profile, File: s.File}) {
		return
	}
	ok := true
	for i, r := range s.Remove {
		ok = resolve(fmt.Sprintf("sysctl.remove[%d]", i), sysctl.Settings{Profile: s.Profile, Remove: []string{r}}) && ok
	}
	for _, k := range sortedKeys(s.Set) {
		ok = resolve("sysctl.set."+k, sysctl.Settings{Profile: s.Profile, Set: map[string]string{k: s.Set[k]}}) && ok
	}
	if ok {
		resolve("sysctl", s)
	}
}

// Settings hands the sysctl section to package sysctl.
func (s Sysctl) Settings() sysctl.Settings {
	return sysctl.Settings{Profile: s.Profile, Set: s.Set, Remove: s.Remove, File: s.File}
}
