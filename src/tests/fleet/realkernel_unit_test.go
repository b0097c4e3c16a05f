package fleet

import (
	"os/exec"
	"testing"

	"github.com/cloudfoundry/cellguard/src/internal/sysctl"
)

// TestKernelFacts: a noble VM's answer in kernelScript's form passes; an
// nspawn box's on this host (6.18, cgroup v1 hybrid) fails both judgments.
func TestKernelFacts(t *testing.T) {
	noble := shapes["noble"]
	k, err := parseKernelFacts("6.8.0-151-generic\nroot=/dev/vda rw console=ttyS0\ncgroup2fs\nsystemd 255 (255.4-1ubuntu8.19)\n")
	if err != nil {
		t.Fatal(err)
	}
	if kernel, v2 := noble.ownKernel(k); !kernel || !v2 {
		t.Errorf("noble VM %+v: kernel %t, v2 %t; want both", k, kernel, v2)
	}
	k, _ = parseKernelFacts("6.18.0-cloud-amd64\nBOOT_IMAGE=/vmlinuz\ntmpfs\nsystemd 255 (255.4-1ubuntu8.19)\n")
	if kernel, v2 := noble.ownKernel(k); kernel || v2 {
		t.Errorf("an nspawn box %+v: kernel %t, v2 %t; want neither", k, kernel, v2)
	}
	if _, err := parseKernelFacts("6.8.0-151-generic\n"); err == nil {
		t.Error("a short answer parsed")
	}
}

// TestSysctlScript: the read-back script, run here by bash, prints every
// key of the profile and the check's exit status (no cellguard on this
// path here, so not 0), and the parser reads them all.
func TestSysctlScript(t *testing.T) {
	p, err := sysctl.Resolve(sysctl.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	script, err := sysctlScript(p)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("bash", "-c", script).Output()
	values, check := parseSysctlRead(string(out))
	for _, e := range p.Entries {
		if v, ok := values[e.Key]; !ok || v == "" {
			t.Errorf("%s not read: %q", e.Key, out)
		}
	}
	if len(values) != len(p.Entries) || check == "" || check == "0" {
		t.Errorf("read %d keys of %d, check exit %q:\n%s", len(values), len(p.Entries), check, out)
	}
}
