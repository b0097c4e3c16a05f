package procfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fuzzseed"
)

// FuzzParseStat: /proc/<pid>/stat of any process, whose comm the process
// chooses (prctl PR_SET_NAME), must never panic the validator, and an
// accepted line must say what it holds.
func FuzzParseStat(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/seeds/stat/*") {
		f.Add(b)
	}
	f.Add([]byte("14863 (runc:[2:INIT]) S 1 100 100 0 -1 4194560 200 0 0 0 3 4 0 0 20 0 1 0 32530 1000\n"))
	f.Add([]byte("7 ()) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n"))
	f.Add([]byte("7 (x) S"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParseStat(b)
		if err != nil {
			return
		}
		if st.PID < 0 {
			t.Fatalf("negative pid %d from %q", st.PID, b)
		}
		if !bytes.Contains(b, []byte("("+st.Comm+")")) {
			t.Fatalf("comm %q is not a parenthesised part of %q", st.Comm, b)
		}
		if st.StartTime != 0 && !bytes.Contains(b, []byte(strconv.FormatUint(st.StartTime, 10))) {
			t.Fatalf("start time %d not in %q", st.StartTime, b)
		}
	})
}

// FuzzParseNSLink: the target of /proc/<pid>/ns/pid.
func FuzzParseNSLink(f *testing.F) {
	for _, b := range fuzzseed.Files(f, "testdata/seeds/nslink/*") {
		f.Add(b)
	}
	for _, s := range []string{"pid:[4026531836]", "pid:[]", "[", "]", "pid:[18446744073709551616]", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		b = bytes.TrimRight(b, "\n")
		ino, err := ParseNSLink(b)
		if err != nil {
			return
		}
		inner := b[bytes.IndexByte(b, '[')+1 : len(b)-1]
		if v, perr := strconv.ParseUint(string(inner), 10, 64); perr != nil || v != ino {
			t.Fatalf("inode %d from %q, whose brackets hold %q", ino, b, inner)
		}
	})
}

// FuzzAppendDirentPIDs: getdents64 records as the kernel hands them over;
// a short or corrupt buffer must end the walk, not index out of range.
func FuzzAppendDirentPIDs(f *testing.F) {
	rec := func(name string) []byte {
		n := 19 + len(name) + 1
		n = (n + 7) &^ 7
		r := make([]byte, n)
		r[16], r[17] = byte(n), byte(n>>8)
		copy(r[19:], name)
		return r
	}
	f.Add(append(append(rec("1"), rec("self")...), rec("4242")...))
	f.Add(rec("0"))
	f.Add([]byte{})
	f.Add(make([]byte, 18))
	f.Fuzz(func(t *testing.T, b []byte) {
		pids := appendDirentNums(nil, b, 1)
		if len(pids) > len(b)/19 {
			t.Fatalf("%d pids from %d bytes", len(pids), len(b))
		}
		for _, p := range pids {
			if p <= 0 {
				t.Fatalf("pid %d", p)
			}
		}
	})
}

// The real seeds must parse: a fuzz target whose seeds are all rejected
// explores nothing but the error paths.
func TestStatSeedsParse(t *testing.T) {
	paths, _ := filepath.Glob("testdata/seeds/stat/*")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		st, err := ParseStat(b)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if filepath.Base(p) == "comm_with_parens_spaces" && st.Comm != "a) (b c" {
			t.Errorf("%s: comm %q, want %q", p, st.Comm, "a) (b c")
		}
		if filepath.Base(p) == "zombie" && st.State != 'Z' {
			t.Errorf("%s: state %q, want Z", p, st.State)
		}
	}
}
