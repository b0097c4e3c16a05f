package sysctl

import (
	"fmt"
	"maps"
	"path"
	"sort"
	"strings"
)

// Profile names.
const (
	ContainerHost = "container-host"
	NoProfile     = "none"
)

// DefaultFile is where apply persists the profile. The 60- prefix sorts it
// after distribution defaults (50-*.conf in /usr/lib/sysctl.d) and before
// the 99-sysctl.conf symlink Debian and Ubuntu point at /etc/sysctl.conf,
// so an operator's /etc/sysctl.conf still has the last word, and check
// says so when it disagrees.
const DefaultFile = "/etc/sysctl.d/60-cellguard.conf"

// Entry is one wanted key. Value is normalized (see NormalizeValue).
type Entry struct {
	Key   string `json:"key"` // canonical dotted name
	Value string `json:"value"`
	// Mode is ModeExact or ModeAtLeast (Value is then a floor); empty
	// means exact.
	Mode   Mode   `json:"mode"`
	Why    string `json:"why,omitempty"`
	Source string `json:"source,omitempty"`
	// From says where the entry came from: "profile container-host",
	// "config" (the job's sysctl.set) or "override" (an entry that replaced
	// a profile value).
	From string `json:"from"`
}

// Profile is a resolved set of entries plus the file they persist to.
type Profile struct {
	Name    string  `json:"profile"`
	File    string  `json:"file"` // host path, e.g. /etc/sysctl.d/60-cellguard.conf
	Entries []Entry `json:"entries"`
}

// containerHost is the built-in profile. Order is the order of the
// persisted file and of every report.
//
// Capacity limits are floors (ModeAtLeast): an operator expects a quota to
// be a minimum, and the host may already allow more (its kernel's default,
// the stemcell, another job), which apply must not take away. Switches,
// modes and limits where 0 means "no limit" are exact: there a higher
// number is not "more", it is a different (stricter) behaviour.
var containerHost = []Entry{
	{
		Key: "fs.pipe-user-pages-soft", Value: "0", Mode: ModeExact,
		Why: "root owns the pipes of every root container, so all of them share one soft budget (default 16384 pages); " +
			"past it the kernel hands out minimal pipes and runc 1.0.0-rc93's 'runc init' hung writing its seccomp " +
			"filter into one; 0 disables the soft limit, so exact: any other value, however high, is a limit again",
		Source: "https://github.com/opencontainers/runc/issues/2828 (fixed in runc by https://github.com/opencontainers/runc/pull/2871)",
	},
	{
		Key: "fs.pipe-user-pages-hard", Value: "0", Mode: ModeExact,
		Why: "a hard limit makes pipe creation fail outright for every container sharing the uid once reached; " +
			"0 (the kernel default) means no hard limit, so exact: any other value is one",
		Source: "https://man7.org/linux/man-pages/man7/pipe.7.html",
	},
	{
		Key: "fs.pipe-max-size", Value: "1048576", Mode: ModeAtLeast,
		Why: "the most an unprivileged (container) process may grow a pipe to with F_SETPIPE_SZ; at least the " +
			"kernel default 1 MiB (a power-of-two page count the kernel stores unrounded): a host allowing more keeps it",
		Source: "https://man7.org/linux/man-pages/man7/pipe.7.html",
	},
	{
		Key: "kernel.keys.root_maxkeys", Value: "1000000", Mode: ModeAtLeast,
		Why: "runc creates a session keyring per container, charged to root; the default 200 makes container " +
			"creation fail with 'disk quota exceeded' (kubelet sets the same value); a quota, so at least",
		Source: "https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/component-helpers/node/util/sysctl/sysctl.go; " +
			"https://github.com/cloudfoundry/garden-runc-release/pull/11",
	},
	{
		Key: "kernel.keys.root_maxbytes", Value: "25000000", Mode: ModeAtLeast,
		Why:    "the byte quota that goes with root_maxkeys: 25 bytes per key, as kubelet sets it; at least",
		Source: "https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/component-helpers/node/util/sysctl/sysctl.go",
	},
	{
		Key: "kernel.keys.maxkeys", Value: "1000000", Mode: ModeAtLeast,
		Why: "the same quota for non-root uids: keyrings of user-namespaced (unprivileged) containers are charged " +
			"to the mapped host uid, which all of Garden's unprivileged containers share (default 200); at least",
		Source: "https://github.com/nestybox/sysbox/issues/332; https://man7.org/linux/man-pages/man7/keyrings.7.html",
	},
	{
		Key: "kernel.keys.maxbytes", Value: "25000000", Mode: ModeAtLeast,
		Why:    "the byte quota that goes with maxkeys (default 20000); at least",
		Source: "https://github.com/nestybox/sysbox/issues/332",
	},
	{
		Key: "kernel.pid_max", Value: "4194304", Mode: ModeAtLeast,
		Why: "every container process takes a host pid; 2^22 is the 64-bit maximum, what garden_ctl wrote and " +
			"what systemd's 50-pid-max.conf and the EKS node image set; at least, like every capacity limit",
		Source: "https://github.com/systemd/systemd/blob/main/sysctl.d/50-pid-max.conf; " +
			"https://github.com/awslabs/amazon-eks-ami/blob/main/templates/al2023/runtime/rootfs/etc/sysctl.conf",
	},
	{
		Key: "fs.inotify.max_user_instances", Value: "8192", Mode: ModeAtLeast,
		Why: "inotify instances are counted per uid, so containers sharing a uid share the default 128; " +
			"containerd watches each cgroup v2 container's memory.events with inotify; at least",
		Source: "https://github.com/awslabs/amazon-eks-ami/blob/main/templates/al2023/runtime/rootfs/etc/sysctl.conf",
	},
	{
		Key: "fs.inotify.max_user_watches", Value: "524288", Mode: ModeAtLeast,
		Why: "watches are also per uid and shared across containers; EKS and kind use 524288; at least (since " +
			"Linux 5.11 the default scales with RAM and may be higher)",
		Source: "https://github.com/awslabs/amazon-eks-ami/blob/main/templates/al2023/runtime/rootfs/etc/sysctl.conf",
	},
	{
		Key: "user.max_user_namespaces", Value: "63359", Mode: ModeAtLeast,
		Why: "each unprivileged container needs a user namespace; hardened images set 0, which breaks them; " +
			"at least 63359 (buildkit documents the number): the kernel's default (half of threads-max) is " +
			"often higher and must not be lowered",
		Source: "https://www.kernel.org/doc/html/latest/admin-guide/sysctl/user.html; " +
			"https://github.com/moby/buildkit/blob/master/examples/kubernetes/sysctl-userns.privileged.yaml",
	},
	{
		Key: "vm.panic_on_oom", Value: "0", Mode: ModeExact,
		Why: "2 panics the host on a memory cgroup OOM, so one container hitting its limit would take the cell " +
			"down; 0 lets the OOM killer act inside the cgroup (kubelet requires 0); a mode, so exact",
		Source: "https://www.kernel.org/doc/html/latest/admin-guide/sysctl/vm.html#panic-on-oom; " +
			"https://github.com/kubernetes/kubernetes/blob/master/staging/src/k8s.io/component-helpers/node/util/sysctl/sysctl.go",
	},
	{
		Key: "net.ipv4.ip_forward", Value: "1", Mode: ModeExact,
		Why:    "container traffic is routed through the host from each container's veth; a switch, so exact",
		Source: "https://kubernetes.io/docs/setup/production-environment/container-runtimes/#prerequisite-ipv4-forwarding-optional",
	},
	{
		Key: "kernel.dmesg_restrict", Value: "1", Mode: ModeExact,
		Why: "containers share the host's kernel log; Garden restricts it so container users cannot read host " +
			"messages; a switch, so exact",
		Source: "https://github.com/cloudfoundry/garden-runc-release/blob/develop/jobs/garden/templates/garden_ctl.erb",
	},
}

// Builtin returns a copy of a built-in profile's entries.
func Builtin(name string) ([]Entry, error) {
	switch name {
	case "", ContainerHost:
		out := make([]Entry, len(containerHost))
		for i, e := range containerHost {
			e.From = "profile " + ContainerHost
			out[i] = e
		}
		return out, nil
	case NoProfile:
		return nil, nil
	}
	return nil, invalidf("unknown sysctl profile %q: want %s or %s", name, ContainerHost, NoProfile)
}

// sysctlDirs are the directories systemd-sysctl reads, in precedence order
// (a file name in an earlier directory masks the same name in later ones).
var sysctlDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// Settings are what an operator chooses about the profile (the job's
// sysctl section and the CLI's flags, merged by the caller).
type Settings struct {
	Profile string            // "container-host" (also when empty) or "none"
	Set     map[string]string // overrides and additions; ">=N" is a floor, else exact
	Remove  []string          // keys dropped from the profile
	File    string            // the persisted file; empty means DefaultFile
}

// Resolve builds the wanted profile from the operator's settings: the
// named profile (empty means container-host), minus Remove, plus Set
// (which overrides profile values; a value written ">=N" is a floor, any
// other is exact). Every key and value is checked for syntax here; whether
// the key exists on this kernel is checked by Apply and Check.
func Resolve(c Settings) (Profile, error) {
	base, err := Builtin(c.Profile)
	if err != nil {
		return Profile{}, err
	}
	name := c.Profile
	if name == "" {
		name = ContainerHost
	}
	file := c.File
	if file == "" {
		file = DefaultFile
	}
	if err := validateFile(file); err != nil {
		return Profile{}, err
	}

	remove, errs := resolveRemove(base, name, c.Remove)
	set, setKeys, setErrs := resolveSet(c.Set, remove)
	if errs = append(errs, setErrs...); len(errs) > 0 {
		sort.Strings(errs)
		return Profile{}, invalidf("sysctl config: %s", strings.Join(errs, "; "))
	}
	return Profile{Name: name, File: file, Entries: merge(base, remove, set, setKeys)}, nil
}

// resolveRemove checks Remove against the profile base (named name): the
// keys to leave out, and what is wrong with the others.
func resolveRemove(base []Entry, name string, raws []string) (map[string]bool, []string) {
	var errs []string
	remove := map[string]bool{}
	for _, r := range raws {
		k, err := ParseKey(r)
		if err != nil {
			errs = append(errs, "remove: "+err.Error())
			continue
		}
		if !hasKey(base, k.Name()) {
			errs = append(errs, fmt.Sprintf("remove %q: not in profile %s", r, name))
			continue
		}
		remove[k.Name()] = true
	}
	return remove, errs
}

// resolveSet checks Set: the operator's entries by key (Value and Mode
// only), their keys in the order given, and what is wrong with the others.
// A key also in remove, or given twice in two notations, is an error.
func resolveSet(raws map[string]string, remove map[string]bool) (map[string]Entry, []string, []string) {
	var errs, keys []string
	set := map[string]Entry{}
	for raw, v := range raws {
		k, err := ParseKey(raw)
		if err != nil {
			errs = append(errs, "set: "+err.Error())
			continue
		}
		if err := validateValueSyntax(k, v); err != nil {
			errs = append(errs, "set: "+err.Error())
			continue
		}
		mode, value, err := parseSetValue(k, v)
		if err != nil {
			errs = append(errs, "set: "+err.Error())
			continue
		}
		if _, dup := set[k.Name()]; dup {
			errs = append(errs, fmt.Sprintf("set %q: the same key is given twice (in another notation)", raw))
			continue
		}
		if remove[k.Name()] {
			errs = append(errs, fmt.Sprintf("set %q: also listed in remove", raw))
			continue
		}
		set[k.Name()] = Entry{Value: value, Mode: mode}
		keys = append(keys, k.Name())
	}
	return set, keys, errs
}

// merge is the profile base without remove, with the operator's set:
// overrides in the profile's order, then the keys the profile lacks,
// sorted.
func merge(base []Entry, remove map[string]bool, set map[string]Entry, setKeys []string) []Entry {
	var out []Entry
	set = maps.Clone(set)
	for _, e := range base {
		if remove[e.Key] {
			continue
		}
		// An operator's value is exact unless written ">=N", even when
		// the number equals a profile floor: writing the plain number is
		// how an operator pins a key.
		if o, ok := set[e.Key]; ok {
			if o.Value != e.Value || o.Mode != e.Mode.OrExact() {
				e.Why = fmt.Sprintf("operator override of %s (profile value %s: %s)", e.Key, e.Wanted(), e.Why)
				e.Value, e.Mode, e.From = o.Value, o.Mode, "override"
			}
			delete(set, e.Key)
		}
		out = append(out, e)
	}
	sort.Strings(setKeys)
	for _, k := range setKeys {
		if o, ok := set[k]; ok {
			why := "set by the operator"
			if o.Mode == ModeAtLeast {
				why = "set by the operator as a floor"
			}
			out = append(out, Entry{Key: k, Value: o.Value, Mode: o.Mode, Why: why, From: "config"})
		}
	}
	return out
}

func hasKey(es []Entry, name string) bool {
	for _, e := range es {
		if e.Key == name {
			return true
		}
	}
	return false
}

// validateFile insists on a *.conf file directly in a directory
// systemd-sysctl reads: anything else would not come back after a reboot,
// and after a reboot BOSH runs no pre-start.
func validateFile(file string) error {
	if !path.IsAbs(file) || path.Clean(file) != file {
		return invalidf("sysctl file %q: want a clean absolute path", file)
	}
	base := path.Base(file)
	if !strings.HasSuffix(base, ".conf") || strings.HasPrefix(base, ".") {
		return invalidf("sysctl file %q: systemd-sysctl reads only *.conf files that are not hidden", file)
	}
	for _, d := range sysctlDirs {
		if path.Dir(file) == d {
			return nil
		}
	}
	return invalidf("sysctl file %q: not in a directory systemd-sysctl reads at boot (%s)",
		file, strings.Join(sysctlDirs, ", "))
}

// validateValueSyntax refuses values that cannot be written as one sysctl.d
// line. Whether a value suits the key is checked against the live kernel.
func validateValueSyntax(k Key, v string) error {
	if NormalizeValue(v) == "" {
		return invalidf("%s: value is empty", k)
	}
	for _, r := range v {
		if r == '\n' || r == '\r' || r == 0 {
			return invalidf("%s: value %q has a line break or NUL", k, v)
		}
	}
	return nil
}

// Render is the file for a profile whose floors are written as they are
// (what Apply persists when the host has nothing higher).
func Render(p Profile) []byte { return render(p, nil) }

// persisted is what Apply writes for one at-least key: the value, and
// where a value above the floor comes from.
type persisted struct {
	Value string
	Why   string
}

// render is the persisted file's content: deterministic, so a second apply
// leaves the file untouched. over replaces the value of at-least keys.
func render(p Profile, over map[string]persisted) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%s sysctl apply (profile %s). Do not edit: the next apply\n", Marker, p.Name)
	b.WriteString("# replaces this file. Change the cellguard job's sysctl properties instead.\n")
	for _, e := range p.Entries {
		b.WriteString("\n")
		if e.Why != "" {
			fmt.Fprintf(&b, "# %s\n", oneLine(e.Why))
		}
		if e.Source != "" {
			fmt.Fprintf(&b, "# source: %s\n", oneLine(e.Source))
		}
		v := e.Value
		if e.IsAtLeast() {
			note := fmt.Sprintf("at least %s", e.Value)
			if o, ok := over[e.Key]; ok && o.Value != e.Value {
				v = o.Value
				note += fmt.Sprintf("; %s is %s, kept so this file does not lower it at boot", o.Value, o.Why)
			}
			fmt.Fprintf(&b, "# %s\n", oneLine(note))
		}
		fmt.Fprintf(&b, "%s = %s\n", e.Key, v)
	}
	return []byte(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
