package fleet

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// realKernelSteps are the deploy scenario's steps on a qemu shape, whose
// VMs boot the stemcell's own kernel: what each VM runs on, and the sysctl
// profile pre-start applied, both read over bosh ssh as an operator would.
func (f *fleet) realKernelSteps(ctx context.Context) []Step {
	return []Step{
		{Name: "each VM's kernel, command line, cgroup hierarchy and systemd (bosh ssh)", Expects: []string{"own-kernel", "cgroup-v2"},
			Do: func(r *Record) error { return f.kernelFacts(ctx, r) }},
		{Name: "the whole sysctl profile, read back on each cell (bosh ssh)", Expects: []string{"sysctls-in-force", "sysctl-check-in-force"},
			Do: func(r *Record) error { return f.sysctlsReadBack(ctx, r, "cell") }},
	}
}

// rebootScenario is make cell's on a qemu shape: drift by hand, a reboot
// of the VM from inside and a recreate through the director, the profile
// read back after each.
func (f *fleet) rebootScenario(ctx context.Context) Scenario {
	return Scenario{Name: "a cell's reboot and recreate", Steps: []Step{
		{Name: "drift by hand on the first cell, reported; then the VM rebooted from inside (bosh ssh: sudo systemctl reboot) and the profile read back",
			Expects: []string{"drift-reported", "rebooted", "sysctls-in-force-after-reboot", "sysctl-check-in-force-after-reboot"},
			Do:      func(r *Record) error { return f.driftAndReboot(ctx, r) }},
		{Name: "bosh recreate of the first cell: delete_vm leaves no qemu, tap or disk; the new VM has the profile in force",
			Expects: []string{"recreate-completes", "old-vm-gone", "sysctls-in-force-after-recreate", "sysctl-check-in-force-after-recreate"},
			Do:      func(r *Record) error { return f.recreateOne(ctx, r) }},
	}}
}

// bootScript prints how a VM's boot went, as systemd measured it: the
// time to multi-user, the slowest units, and the chain the agent waited on.
const bootScript = `systemd-analyze time 2>&1 | head -n 2; systemd-analyze blame --no-pager 2>&1 | head -n 6; ` +
	`systemd-analyze critical-chain --no-pager bosh-agent.service 2>&1 | tail -n +3 | head -n 12; ` +
	`sudo journalctl -b -u cellguard-9p-shares --no-pager -o cat 2>&1 | grep mount-9p-shares | tail -n 2`

// bootTimes says, for each VM of target, how its boot went (bootScript), and
// how often its kernel panicked by its console (the QEMU CPI's panic=).
func (f *fleet) bootTimes(ctx context.Context, r expecter, target string) {
	rows, _, err := f.ssh(ctx, target, bootScript)
	if err != nil {
		r.Say("      boot times (bosh ssh %s): %v", target, err)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Instance < rows[j].Instance })
	for _, row := range rows {
		for _, l := range strings.Split(strings.TrimRight(row.Stdout, "\n"), "\n") {
			r.Say("      %s: boot: %s", row.Instance, l)
		}
	}
	vms, _ := VMs(f.cpiState)
	for _, vm := range vms {
		b, _ := os.ReadFile(filepath.Join(vm.Dir, "console.log"))
		r.Say("      %s (%s): console: %d boot(s), %d kernel panic(s)", vm.Name, vm.CID,
			bytes.Count(b, []byte("Linux version 6.")), bytes.Count(b, []byte("Kernel panic - not syncing")))
	}
}

// recreateOne recreates the first cell through the director, then checks
// what the QEMU CPI's delete_vm left of the old VM (its qemu process, its
// tap in the lab's namespace, its directory with the disk overlay), and
// reads the profile back on the new VM: pre-start applies it again.
func (f *fleet) recreateOne(ctx context.Context, r *Record) error {
	rows, _, err := f.ssh(ctx, "cell", "true")
	if err != nil || len(rows) == 0 {
		return fmt.Errorf("the cells: %v (%d rows)", err, len(rows))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Instance < rows[j].Instance })
	cell := rows[0].Instance
	vms, err := VMs(f.cpiState)
	if err != nil {
		return err
	}
	var old VM
	for _, vm := range vms {
		if vm.Name == cell {
			old = vm
		}
	}
	if old.CID == "" {
		return fmt.Errorf("no VM of %s in %s", cell, f.cpiState)
	}
	net := readOr(filepath.Join(old.Dir, "net.env"))
	lab, tap := keyValue(net, "LAB_NETNS"), keyValue(net, "TAP")
	res, err := f.bosh.Run(ctx, "-d", f.dep, "recreate", cell)
	if err != nil {
		return err
	}
	r.Expect("recreate-completes", res.ExitCode == 0, "bosh recreate %s exited %d after %s (log %s)", cell, res.ExitCode, res.Took.Round(time.Second), res.Log)
	if res.ExitCode != 0 {
		return fmt.Errorf("bosh recreate %s exited %d", cell, res.ExitCode)
	}
	left := leftOfQEMUVM(old.CID, old.Dir, lab, tap)
	r.Expect("old-vm-gone", len(left) == 0, "%s's old VM %s after delete_vm: left %v (qemu -name cellguard-cpi-%s, tap %s in %s, %s)",
		cell, old.CID, left, strings.TrimPrefix(old.CID, "vm-"), tap, lab, old.Dir)
	f.bootTimes(ctx, r, cell)
	return f.sysctlsReadBack(ctx, &suffixed{r, "-after-recreate"}, cell)
}

// leftOfQEMUVM is what is still there of QEMU VM cid: a process whose
// command line names it, its tap device, its directory.
func leftOfQEMUVM(cid, dir, lab, tap string) []string {
	var left []string
	name := []byte("-name\x00cellguard-cpi-" + strings.TrimPrefix(cid, "vm-") + "\x00")
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, name) {
			left = append(left, "qemu pid "+filepath.Base(filepath.Dir(p)))
		}
	}
	if tap != "" && lab != "" && exec.Command("nsenter", "--net="+lab, "ip", "link", "show", "dev", tap).Run() == nil {
		left = append(left, "tap "+tap)
	}
	if _, err := os.Stat(dir); err == nil {
		left = append(left, "directory "+dir)
	}
	return left
}

// drifted is the value the drift step writes by hand: the kernel's default
// soft pipe budget, under which seed 001's runc init hung.
const drifted = "fs.pipe-user-pages-soft=16384"

// driftAndReboot sets one key off the profile by hand on the first cell,
// and expects cellguard sysctl check to name it; then reboots that VM from
// inside (its qemu resets and boots the same disk) and expects the profile
// in force again: systemd-sysctl applies the file pre-start persisted, and
// no pre-start runs on a reboot.
func (f *fleet) driftAndReboot(ctx context.Context, r *Record) error {
	rows, _, err := f.ssh(ctx, "cell", "cat /proc/sys/kernel/random/boot_id")
	if err != nil || len(rows) == 0 {
		return fmt.Errorf("the cells' boot ids: %v (%d rows)", err, len(rows))
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Instance < rows[j].Instance })
	cell, boot := rows[0].Instance, strings.TrimSpace(rows[0].Stdout)
	out, res, err := f.ssh(ctx, cell, "sudo sysctl -q -w "+drifted+"; sudo /var/vcap/packages/cellguard/bin/cellguard sysctl check --config "+cellguardConfig+" 2>&1; echo \"check-exit $?\"")
	if err != nil {
		return err
	}
	report := ""
	if len(out) == 1 {
		report = out[0].Stdout
	}
	for _, l := range strings.Split(strings.TrimRight(report, "\n"), "\n") {
		r.Say("      %s: %s", cell, l)
	}
	_, check := parseSysctlRead(report)
	key, _, _ := strings.Cut(drifted, "=")
	r.Expect("drift-reported", res.ExitCode == 0 && check != "" && check != "0" && strings.Contains(report, key),
		"after sysctl -w %s by hand, cellguard sysctl check exited %q naming %s: %t", drifted, check, key, strings.Contains(report, key))
	// The ssh session ends with the VM: its exit status says nothing.
	t0 := time.Now()
	if _, _, err := f.ssh(ctx, cell, "sudo systemctl reboot"); err != nil {
		r.Say("      bosh ssh %s -c 'sudo systemctl reboot': %v", cell, err)
	}
	// Run 2: a VM's first boot under TCG took about 7 minutes; its reboot
	// (shutdown, then the boot) was not back within 10.
	newBoot := ""
	for time.Since(t0) < 20*time.Minute && ctx.Err() == nil {
		time.Sleep(15 * time.Second)
		if rows, res, err := f.ssh(ctx, cell, "cat /proc/sys/kernel/random/boot_id"); err == nil && res.ExitCode == 0 && len(rows) == 1 {
			if b := strings.TrimSpace(rows[0].Stdout); b != "" && b != boot {
				newBoot = b
				break
			}
		}
	}
	r.Expect("rebooted", newBoot != "", "%s: boot id %s, after the reboot %q (%s after the reboot was asked for)", cell, boot, newBoot, time.Since(t0).Round(time.Second))
	if newBoot == "" {
		return fmt.Errorf("%s did not come back from its reboot within 20 minutes", cell)
	}
	// The shutdown's length: the last boot's first and last journal entries.
	if rows, _, err := f.ssh(ctx, cell, "sudo journalctl --list-boots --no-pager | tail -n 2"); err == nil && len(rows) == 1 {
		for _, l := range strings.Split(strings.TrimRight(rows[0].Stdout, "\n"), "\n") {
			r.Say("      %s: boots: %s", cell, l)
		}
	}
	f.bootTimes(ctx, r, cell)
	return f.sysctlsReadBack(ctx, &suffixed{r, "-after-reboot"}, cell)
}

// kernelScript prints, one per line: uname -r, /proc/cmdline, the type of
// /sys/fs/cgroup and systemd's version line.
const kernelScript = `uname -r; cat /proc/cmdline; stat -fc %T /sys/fs/cgroup; systemctl --version | head -n 1`

// kernelFacts is one VM's answer to kernelScript.
type kernelFacts struct{ release, cmdline, cgroupFS, systemd string }

func parseKernelFacts(stdout string) (kernelFacts, error) {
	l := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(l) != 4 {
		return kernelFacts{}, fmt.Errorf("want 4 lines (uname -r, /proc/cmdline, stat -fc %%T, systemctl --version), got %d: %q", len(l), stdout)
	}
	return kernelFacts{strings.TrimSpace(l[0]), strings.TrimSpace(l[1]), strings.TrimSpace(l[2]), strings.TrimSpace(l[3])}, nil
}

// ownKernel judges one VM's facts: Ubuntu's 6.8 kernel (linux-generic, as
// the noble stemcell installs it), on the unified hierarchy, with the
// shape's systemd.
func (s shape) ownKernel(k kernelFacts) (kernel, v2 bool) {
	return strings.HasPrefix(k.release, "6.8.0-") && strings.HasPrefix(k.systemd, fmt.Sprintf("systemd %d ", s.systemd)),
		k.cgroupFS == "cgroup2fs"
}

func (f *fleet) kernelFacts(ctx context.Context, r *Record) error {
	rows, res, err := f.ssh(ctx, "", kernelScript)
	if err != nil {
		return err
	}
	kernels, v2s := 0, 0
	for _, row := range rows {
		k, err := parseKernelFacts(row.Stdout)
		if err != nil {
			r.Say("      %s: %v", row.Instance, err)
			continue
		}
		kernel, v2 := f.shape.ownKernel(k)
		if kernel {
			kernels++
		}
		if v2 {
			v2s++
		}
		r.Say("      %s: uname -r %s | %s | /sys/fs/cgroup %s", row.Instance, k.release, k.systemd, k.cgroupFS)
		r.Say("      %s: /proc/cmdline %s", row.Instance, k.cmdline)
	}
	n := f.cells + f.others
	r.Expect("own-kernel", res.ExitCode == 0 && len(rows) == n && kernels == n,
		"%d of %d VMs run Ubuntu's 6.8.0 kernel and systemd %d (bosh ssh exit %d, log %s)", kernels, n, f.shape.systemd, res.ExitCode, res.Log)
	r.Expect("cgroup-v2", len(rows) == n && v2s == n, "%d of %d VMs mount cgroup2fs at /sys/fs/cgroup", v2s, n)
	f.bootTimes(ctx, r, "")
	return nil
}

// sysctlScript reads every key of p from /proc/sys ("key value" lines),
// then runs the cell's own `cellguard sysctl check` on the job's config and
// prints its exit status last.
func sysctlScript(p sysctl.Profile) (string, error) {
	var b strings.Builder
	b.WriteString("for kp in")
	for _, e := range p.Entries {
		k, err := sysctl.ParseKey(e.Key)
		if err != nil {
			return "", fmt.Errorf("profile key %s: %w", e.Key, err)
		}
		fmt.Fprintf(&b, " %s:%s", e.Key, k.Path())
	}
	b.WriteString(`; do printf '%s %s\n' "${kp%%:*}" "$(tr '\t' ' ' </proc/sys/${kp#*:})"; done; `)
	b.WriteString(`sudo /var/vcap/packages/cellguard/bin/cellguard sysctl check --config ` + cellguardConfig + ` >/dev/null 2>&1; echo "check-exit $?"`)
	return b.String(), nil
}

// parseSysctlRead is one cell's answer to sysctlScript: each key's value
// and cellguard sysctl check's exit status ("" when it did not print one).
func parseSysctlRead(stdout string) (map[string]string, string) {
	values, check := map[string]string{}, ""
	for _, line := range strings.Split(stdout, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		switch {
		case !ok:
		case k == "check-exit":
			check = v
		default:
			values[k] = v
		}
	}
	return values, check
}

// expecter is a Record, or one whose expectation ids carry a suffix (the
// same read-back after a reboot).
type expecter interface {
	Expect(id string, ok bool, format string, args ...any) bool
	Say(format string, args ...any)
}

type suffixed struct {
	*Record
	suffix string
}

func (s *suffixed) Expect(id string, ok bool, format string, args ...any) bool {
	return s.Record.Expect(id+s.suffix, ok, format, args...)
}

// sysctlsReadBack reads the profile the addon asks for (container-host,
// nothing removed: real-kernel-addon-ops.yml) back on every cell, and
// prints the table key | profile | value read.
func (f *fleet) sysctlsReadBack(ctx context.Context, r expecter, target string) error {
	p, err := sysctl.Resolve(sysctl.Settings{})
	if err != nil {
		return fmt.Errorf("the container-host profile: %w", err)
	}
	script, err := sysctlScript(p)
	if err != nil {
		return err
	}
	rows, res, err := f.ssh(ctx, target, script)
	if err != nil {
		return err
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Instance < rows[j].Instance })
	read := make([]map[string]string, len(rows))
	checks := 0
	for i, row := range rows {
		var check string
		read[i], check = parseSysctlRead(row.Stdout)
		if check == "0" {
			checks++
		}
		r.Say("      %s: cellguard sysctl check exit %q", row.Instance, check)
	}
	r.Say("   | key | profile | read on %d cells (bosh ssh) |", len(rows))
	r.Say("   | --- | --- | --- |")
	held := 0
	for _, e := range p.Entries {
		ok, vals := len(rows) > 0, map[string]bool{}
		var seen []string
		for _, m := range read {
			v, there := m[e.Key]
			if !there || !e.SatisfiedBy(v) {
				ok = false
			}
			if !there {
				v = "(not read)"
			}
			if !vals[v] {
				vals[v] = true
				seen = append(seen, v)
			}
		}
		if ok {
			held++
		}
		mark := ""
		if !ok {
			mark = " NOT IN FORCE"
		}
		r.Say("   | %s | %s | %s%s |", e.Key, e.Wanted(), strings.Join(seen, " / "), mark)
	}
	want := f.cells
	if target != "cell" {
		want = 1
	}
	r.Expect("sysctls-in-force", res.ExitCode == 0 && len(rows) == want && held == len(p.Entries),
		"%d of %d profile keys in force on all %d of %s (bosh ssh exit %d, log %s)", held, len(p.Entries), len(rows), target, res.ExitCode, res.Log)
	r.Expect("sysctl-check-in-force", len(rows) == want && checks == want,
		"cellguard sysctl check exited 0 (every key in force, live and at boot) on %d of %d VMs of %s", checks, len(rows), target)
	return nil
}
