package boundedexec

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit"
)

// writeScript writes a script, closed before anything runs it.
func writeScript(t *testing.T, path, body string) {
	t.Helper()
	testkit.WriteExec(t, path, "#!/bin/sh\n"+body)
}

// TestOutputRunsTheOpenFile: what runs is the file open in bin, not what
// its path names by the time of the exec; a script sees /proc/self/fd/3
// as $0, an ELF binary its path as argv[0].
func TestOutputRunsTheOpenFile(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	writeScript(t, prog, `echo "checked $0 $1"`+"\n")
	bin, err := os.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	writeScript(t, prog+".new", "echo swapped\n")
	if err := os.Rename(prog+".new", prog); err != nil {
		t.Fatal(err)
	}
	out, err := Output(context.Background(), 0, bin, "arg")
	if err != nil || string(out) != "checked /proc/self/fd/3 arg\n" {
		t.Fatalf("Output = %q, %v; want the checked script, with $0 /proc/self/fd/3", out, err)
	}

	cat, err := os.Open("/bin/cat")
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	out, err = Output(context.Background(), 0, cat, "/proc/self/cmdline")
	if err != nil || string(out) != "/bin/cat\x00/proc/self/cmdline\x00" {
		t.Fatalf("cat's argv = %q, %v; want its path as argv[0]", out, err)
	}
}

// TestCommandRunsTheOpenFile: the same through Command and Run, the ctl
// scripts' way.
func TestCommandRunsTheOpenFile(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "ctl")
	writeScript(t, prog, "echo started $1\n")
	bin, err := os.Open(prog)
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	if err := os.Remove(prog); err != nil {
		t.Fatal(err)
	}
	out, err := Run(context.Background(), Command(bin, "start"))
	if err != nil || out != "started start\n" {
		t.Fatalf("Run = %q, %v; want the open script, though its path is gone", out, err)
	}
}

// TestScriptNeedsItsDescriptorAfterExec is why Command hands the file to
// the child instead of naming the parent's descriptor: the kernel execs
// /proc/self/fd/N before descriptors close on exec, but a script's
// interpreter opens that path afterwards, and a close-on-exec descriptor
// is gone by then.
func TestScriptNeedsItsDescriptorAfterExec(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "ctl")
	writeScript(t, prog, "echo ran\n")
	bin, err := os.Open(prog) // close-on-exec, as every Go descriptor
	if err != nil {
		t.Fatal(err)
	}
	defer bin.Close()
	out, err := exec.Command("/proc/self/fd/" + strconv.Itoa(int(bin.Fd()))).CombinedOutput()
	if err == nil || strings.Contains(string(out), "ran") {
		t.Fatalf("a script through a close-on-exec descriptor ran: %q, %v", out, err)
	}
	t.Logf("through the parent's close-on-exec descriptor: %v: %s", err, out)
}
