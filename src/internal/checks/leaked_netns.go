package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cloudfoundry/cellguard/src/internal/facts"
	"github.com/cloudfoundry/cellguard/src/internal/hostroot"
	"github.com/cloudfoundry/cellguard/src/internal/validator"
)

// LeakedNetns finds network namespaces that no process is in and no bind
// mount names, kept alive only by an open file, and says what holds each
// and what is still in it.
type LeakedNetns struct{}

var _ judge = LeakedNetns{}

// NetnsProbeProperty is the job property that lets leaked-netns ask
// sockets for their namespace (facts.Spec.NetnsProbe).
const NetnsProbeProperty = "cellguard.validator.netns_probe"

func (LeakedNetns) Meta() validator.Meta {
	return validator.Meta{
		ID: "leaked-netns",
		// Every layout. Receiving a socket re-tags it only where the v1
		// net_cls and net_prio hierarchies are mounted (none on a pure v2
		// host), and only there does the probe join its holder's cgroups.
		Layouts: everyLayout,
		Title:   "no network namespace is kept alive only by an open file",
		Severity: map[validator.Phase]validator.Severity{
			// A leak keeps its addresses: a new container given one of them
			// gets traffic meant for the old one. It is the holder's bug,
			// and neither blocking a deploy nor a drain frees it.
			validator.PreStart: validator.Warning,
			validator.Drain:    validator.Warning,
		},
		Story: "A monitoring agent's long-lived netlink socket, made inside a pod's network namespace, " +
			"kept that namespace and its ipvlan address alive after the pod was deleted; no process was in it " +
			"and no mount named it, so lsns and /proc/*/ns/net did not show it, while the address it kept " +
			"was handed to a new pod.",
		References: []string{
			"https://usenix.org/conference/srecon23americas/presentation/malla",
			"https://man7.org/linux/man-pages/man7/network_namespaces.7.html",
			"https://man7.org/linux/man-pages/man2/pidfd_getfd.2.html",
		},
		Fix: "Restart the process that holds the namespace (the finding names its pid, command and fd): the " +
			"namespace, its interfaces and addresses go away with its last file. Then fix the holder so it " +
			"closes sockets it opened in other namespaces.",
	}
}

// Needs: the leaked-netns scan (which lists processes from the snapshot).
func (LeakedNetns) Needs() []facts.Kind { return []facts.Kind{facts.Snapshot, facts.Netns} }

// Judge reports each namespace held only by open files, and what the scan
// could not ask.
func (LeakedNetns) Judge(h *facts.Host) ([]validator.Finding, error) {
	f := h.Netns()
	if f.Err != nil {
		return nil, f.Err
	}
	res, live := f.Result, f.Live
	var fs []validator.Finding
	for _, l := range res.Leaks {
		fs = append(fs, leakFinding(l))
	}
	switch {
	case res.Unresolved > 0 && f.ProbeOff:
		// Asking means duplicating other processes' sockets: only when
		// the operator allows it.
		fs = append(fs, validator.Finding{Subject: "sockets", Status: validator.Skip,
			Detail: fmt.Sprintf("%d sockets not judged: probe off (%s); a namespace only a socket holds is not looked for", res.Unresolved, NetnsProbeProperty),
			Data:   map[string]string{"unresolved": strconv.Itoa(res.Unresolved), "probe": "off"}})
	case res.Unresolved > 0 && !f.Probed:
		fs = append(fs, validator.Finding{Subject: "sockets", Status: validator.Skip,
			Detail: fmt.Sprintf("%d sockets not asked for their namespace: no probe under %s (a fixture root)", res.Unresolved, hostroot.Dir(h.Root()))})
	case res.NotInspected > 0:
		// Asking would have changed how the holder's packets are filtered
		// and prioritized (issue 23: the bosh-agent's NATS firewall): not
		// asked, and said so, never guessed.
		fs = append(fs, validator.Finding{Subject: "sockets", Status: validator.Warn,
			Detail: fmt.Sprintf("%d of %d sockets not inspected: receiving them would re-tag them with cellguard's net_cls classid "+
				"and net_prio index (first: %v); a namespace only they hold would be missed, and %d more could not be asked. "+
				"cellguard asks them from their holder's cgroups where that hierarchy is mounted in its mount namespace (systemd on v1 and hybrid hosts mounts net_cls,net_prio)",
				res.NotInspected, res.Sockets, res.NotInspectedErr, res.Unresolved-res.NotInspected),
			Data: map[string]string{"unresolved": strconv.Itoa(res.Unresolved), "not_inspected": strconv.Itoa(res.NotInspected)}})
	case res.Unresolved > 0:
		fs = append(fs, validator.Finding{Subject: "sockets", Status: validator.Warn,
			Detail: fmt.Sprintf("%d of %d sockets could not be asked for their namespace (%v): a namespace only they hold would be missed",
				res.Unresolved, res.Sockets, res.ProbeErr),
			Data: map[string]string{"unresolved": strconv.Itoa(res.Unresolved)}})
	}
	fs = append(fs, validator.Finding{Status: validator.Pass,
		Detail: fmt.Sprintf("%d processes, %d sockets and %d namespace files read; %d namespaces held only by open files; open files listed by %s",
			res.Processes, res.Sockets, res.NSFiles, len(res.Leaks), via(res, live, f.ProbeOff)),
		Data: map[string]string{"processes": strconv.Itoa(res.Processes), "sockets": strconv.Itoa(res.Sockets),
			"namespace_files": strconv.Itoa(res.NSFiles), "leaks": strconv.Itoa(len(res.Leaks)),
			"unreadable_processes": strconv.Itoa(res.Denied), "files_via": res.Via}})
	return fs, nil
}

// via says which way open files were listed and, for the fd walk, why
// not the iterator: the pass finding says which path ran, never guesses.
func via(res facts.NetnsResult, live, probeOff bool) string {
	switch {
	case res.Via == facts.ViaIterator:
		return "the BPF task_file iterator (sockets' namespaces from the kernel, none asked one by one)"
	case res.IterErr != nil:
		return fmt.Sprintf("the fd walk of /proc/<pid>/fd (the BPF task_file iterator could not run: %v)", res.IterErr)
	case !live:
		return "the fd walk of /proc/<pid>/fd (a fixture root: the BPF iterator reads only the live kernel)"
	case probeOff:
		return "the fd walk of /proc/<pid>/fd (the BPF iterator runs only with " + NetnsProbeProperty + ")"
	default:
		return "the fd walk of /proc/<pid>/fd"
	}
}

func leakFinding(l facts.NetnsLeak) validator.Finding {
	var holders, pids, ifs, addrs []string
	seen := map[int]bool{}
	for _, h := range l.Holders {
		holders = append(holders, fmt.Sprintf("pid %d (%s) fd %d (%s)", h.PID, h.Comm, h.FD, h.Kind))
		if !seen[h.PID] {
			seen[h.PID] = true
			pids = append(pids, strconv.Itoa(h.PID))
		}
	}
	for _, i := range l.Interfaces {
		s := i.Name
		if len(i.Addrs) > 0 {
			s += " " + strings.Join(i.Addrs, " ")
			addrs = append(addrs, i.Addrs...)
		}
		ifs = append(ifs, s)
	}
	detail := "held only by " + strings.Join(holders, ", ")
	if more := l.Held - len(l.Holders); more > 0 {
		detail += fmt.Sprintf(" and %d more open files", more)
	}
	switch {
	case l.InspectErr != "":
		detail += "; its interfaces could not be read: " + l.InspectErr
	case len(ifs) > 0:
		detail += "; still has " + strings.Join(ifs, ", ")
	}
	ns := fmt.Sprintf("net:[%d]", l.Inode)
	return validator.Finding{Subject: ns, Status: validator.Fail, Detail: detail,
		Data: map[string]string{"namespace": ns, "inode": strconv.FormatUint(l.Inode, 10),
			"holders": strings.Join(holders, "; "), "pids": strings.Join(pids, " "), "held": strconv.Itoa(l.Held),
			"interfaces": strings.Join(ifs, "; "), "addresses": strings.Join(addrs, " ")}}
}
