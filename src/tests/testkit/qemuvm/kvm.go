package qemuvm

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// kvmProbeTimeout bounds a boot under KVM that has not proved to work: a
// working KVM boots this image in seconds; a broken one fails at once
// ("KVM internal error") or hangs silently (an uncompressed vmlinux did).
const kvmProbeTimeout = 2 * time.Minute

// kvm is this process's verdict on KVM, from the first boot that tried it.
var kvm struct {
	sync.Mutex
	decided, works bool
	why            string
}

// bootKVM boots under KVM when /dev/kvm opens and KVM has not failed in
// this process. The first such boot is the probe: it must reach the agent
// and a booted systemd within kvmProbeTimeout, and its VM is the one
// returned. Nil and why otherwise.
func bootKVM(ctx context.Context, img Image, opts Options) (*VM, string) {
	kvm.Lock()
	defer kvm.Unlock()
	if kvm.decided && !kvm.works {
		return nil, kvm.why
	}
	verdict := verdictFile(img)
	if b, err := os.ReadFile(verdict); err == nil {
		kvm.decided, kvm.why = true, strings.TrimSpace(string(b))+" (remembered in "+verdict+")"
		return nil, kvm.why
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		kvm.decided, kvm.why = true, fmt.Sprintf("open /dev/kvm: %v", err)
		return nil, kvm.why
	}
	f.Close()
	timeout := opts.BootTimeout
	if !kvm.decided {
		timeout = min(timeout, kvmProbeTimeout)
		fmt.Fprintf(opts.Log, "qemuvm: probing KVM with a boot (at most %v)\n", timeout)
	}
	t0 := time.Now()
	v, err := bootOnce(ctx, img, opts, "kvm", timeout)
	if err != nil {
		fmt.Fprintf(opts.Log, "qemuvm: the KVM probe failed after %v\n", time.Since(t0).Round(time.Millisecond))
		if ctx.Err() != nil {
			return nil, ctx.Err().Error() // the caller's deadline, not KVM's fault
		}
		kvm.decided, kvm.works = true, false
		kvm.why = "a boot under KVM failed: " + firstLine(err.Error())
		_ = os.WriteFile(verdict, []byte(kvm.why+"\n"), 0o644) // a cache: without it, the next process probes again
		return nil, kvm.why
	}
	kvm.decided, kvm.works = true, true
	return v, ""
}

// cancelOnKVMError ends a KVM boot as soon as qemu reports that KVM could
// not run the guest (qemu then pauses the guest rather than exiting).
func (v *VM) cancelOnKVMError(ctx context.Context, cancel context.CancelFunc) {
	p := filepath.Join(v.dir, "qemu.stderr")
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.exited:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "KVM internal error") {
			cancel()
			return
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// verdictFile remembers a failed KVM probe beside the images, for this host
// kernel, this QEMU and the image's kernel: a failed probe costs up to
// kvmProbeTimeout (18 s here), and nothing but one of those three changes
// its outcome. Deleting the file makes the next boot probe again.
func verdictFile(img Image) string {
	return KVMVerdictFile(filepath.Dir(filepath.Dir(img.Dir)), img.Env["KERNEL_ABI"])
}

// KVMVerdictFile is the file in cacheDir (image.sh's cache) that says KVM
// failed to boot guest kernel kernelABI on this host kernel with this QEMU.
// The QEMU CPI (src/tests/bosh/cpi/qemu-cpi) reads and writes the same file,
// so a probe failed by either is not paid again by the other.
func KVMVerdictFile(cacheDir, kernelABI string) string {
	var u unix.Utsname
	_ = unix.Uname(&u)
	qemu, _ := exec.LookPath("qemu-system-x86_64")
	var qemuID string
	if st, err := os.Stat(qemu); err == nil {
		qemuID = fmt.Sprintf("%d-%d", st.Size(), st.ModTime().Unix())
	}
	key := fmt.Sprintf("%s %s %s", unix.ByteSliceToString(u.Release[:]), qemuID, kernelABI)
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(cacheDir, fmt.Sprintf("kvm-failed-%x", sum[:6]))
}
