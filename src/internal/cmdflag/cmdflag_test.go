package cmdflag

import (
	"bytes"
	"flag"
	"testing"
)

func TestValue(t *testing.T) {
	testCases := []struct {
		name string
		args []string
		want string
		ok   bool
	}{
		{"separate", []string{"--phase", "drain", "--bogus"}, "drain", true},
		{"joined", []string{"-phase=pre-start"}, "pre-start", true},
		{"first wins", []string{"--phase=drain", "--phase", "pre-start"}, "drain", true},
		{"after --", []string{"--", "--phase", "drain"}, "", false},
		{"positional", []string{"phase", "drain"}, "", false},
		{"missing value", []string{"--phase"}, "", true},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Value(tc.args, "phase")
			if got != tc.want || ok != tc.ok {
				t.Errorf("Value(%q) = %q, %v; want %q, %v", tc.args, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParse(t *testing.T) {
	newFS := func(out *bytes.Buffer) (*flag.FlagSet, *List) {
		fs := flag.NewFlagSet("sub", flag.ContinueOnError)
		fs.SetOutput(out)
		var l List
		fs.Var(&l, "x", "repeatable")
		return fs, &l
	}
	var out bytes.Buffer
	fs, _ := newFS(&out)
	if o := Parse("prog", fs, []string{"--nope"}); o != Bad {
		t.Fatalf("bad flag: %v", o)
	}
	want := "prog: error: sub: flag provided but not defined: --nope\nprog: hint: run 'prog sub --help' for its flags\n"
	if out.String() != want {
		t.Errorf("bad flag printed %q, want %q", out.String(), want)
	}
	out.Reset()
	fs, l := newFS(&out)
	if o := ParseInterspersed("prog", fs, []string{"a", "-x", "1", "b", "--x=2"}); o != Parsed {
		t.Fatalf("interspersed: %v", o)
	}
	if got := fs.Args(); len(got) != 2 || got[0] != "a" || got[1] != "b" || l.String() != "1,2" {
		t.Errorf("interspersed: args %q, x %q", got, l.String())
	}
	out.Reset()
	fs, _ = newFS(&out)
	fs.Usage = func() { out.WriteString("usage\n") }
	if o := Parse("prog", fs, []string{"--help"}); o != Help || out.String() != "usage\n" {
		t.Errorf("--help: %v, printed %q", o, out.String())
	}
}
