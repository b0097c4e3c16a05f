package runcstate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudfoundry/cellguard/src/tests/testkit/fakehost"
)

// reference is what Decode did before decodeFast: encoding/json alone.
func reference(b []byte) (*State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// sameDecode fails t unless Decode and encoding/json agree on b: both
// refuse it, or both accept it with equal states.
func sameDecode(t *testing.T, b []byte) {
	t.Helper()
	want, werr := reference(b)
	got, gerr := Decode(b)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("encoding/json error %v, Decode error %v, on %.200q", werr, gerr, b)
	}
	if werr != nil {
		return
	}
	if !got.Created.Equal(want.Created) {
		t.Fatalf("created %v, want %v", got.Created, want.Created)
	}
	g, w := *got, *want
	g.Created, w.Created = time.Time{}, time.Time{} // zones are distinct pointers
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("Decode\n%+v\nencoding/json\n%+v\non %.300q", g, w, b)
	}
	var fast State
	if decodeFast(b, &fast, nil) {
		fast.Created = time.Time{}
		if !reflect.DeepEqual(fast, w) {
			t.Fatalf("decodeFast accepted with\n%+v\nencoding/json\n%+v", fast, w)
		}
	}
}

// synthState is one container's state.json of a fakehost cell.
func synthState(t testing.TB) []byte {
	t.Helper()
	s := fakehost.Spec{Containers: 1, ProcsPerContainer: 1, HostProcs: 1, RuntimeRoot: "/run/runc"}
	w, err := fakehost.Generate(filepath.Join(t.TempDir(), "cell"), s)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(w.Root, "run/runc/c000000/state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func realState(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/good_runc115_hybrid_state.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edgeCases are inputs where a hand-written scanner could part ways with
// encoding/json.
var edgeCases = []string{
	`{"id":"c1","init_process_pid":7,"init_process_start":"123","config":{"namespaces":[{"type":"NEWPID","path":""}],"cgroups":{"path":"/garden/c1"}}}`,
	`{"ID":"upper","Init_Process_Pid":9,"CONFIG":{"Cgroups":{"path":"/x"},"NAMESPACES":[]}}`,
	`{"id":"a","id":"b","cgroup_paths":{"memory":"/m"},"cgroup_paths":{"pids":"/p"}}`,
	`{"config":{"cgroups":{"path":"/a"}},"config":{"cgroups":{"name":"n"}}}`,
	`{"\u0069d":"escaped key"}`,
	`{"id":"quote \" and \\ and \u00e9 and \/"}`,
	`{"config":null,"cgroup_paths":null}`,
	`{"config":{"cgroups":null}}`,
	`{"config":{"cgroups":{"path":"/a"},"cgroups":null}}`,
	`{"config":{"cgroups":{"path":"/a"}},"config":{"cgroups":{"parent":"p"}}}`,
	`{"config":{"cgroups":"x"}}`,
	`{"config":{"cgroups":{"Path":"/a","SYSTEMD":true,"devices":[{"a":1}],"scope_prefix":7}}}`,
	`{"config":"not an object"}`,
	`{"config":[1,2]}`,
	`{"init_process_pid":"seven"}`,
	`{"init_process_pid":1.5}`,
	`{"rootless":"yes"}`,
	`{"created":"yesterday"}`,
	`{"skipped":[1,-0,0.5,1e10,-2E-3,true,false,null,{},[],{"a":[{}]}],"id":"ok"}`,
	`{"skipped":01}`,
	`{"skipped":1.}`,
	`{"skipped":.5}`,
	`{"skipped":-}`,
	`{"skipped":1e}`,
	`{"skipped":tru}`,
	`{"skipped":nul}`,
	`{"skipped":"bad escape \x"}`,
	`{"skipped":"bad unicode \u12G4"}`,
	"{\"skipped\":\"raw control \x01\"}",
	"{\"skipped\":\"invalid utf8 \xff\",\"id\":\"x\xffy\"}",
	`{"skipped":[1,2,]}`,
	`{"skipped":{"a":1,}}`,
	`{"skipped":{"a" 1}}`,
	`{"skipped":{1:2}}`,
	`{"id":"x"} trailing`,
	`{"id":"x"}{}`,
	" \t\r\n{\"id\":\"ws\"} \n",
	`{}`,
	`null`,
	`[]`,
	`"string"`,
	``,
	`{`,
	`{"id":"unterminated`,
	`{"skipped":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}`,
	`{"skipped":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	"\xef\xbb\xbf{\"id\":\"bom\"}",
	`{"ſkipped":1,"İd":"dotted","ıd":"dotless","K":1}`,
	// skip keeps up to 64 open containers.
	`{"skipped":` + strings.Repeat("[", 63) + strings.Repeat("]", 63) + `}`,
	`{"skipped":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`,
	`{"skipped":` + strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65) + `}`,
	`{"skipped":"long string without escapes, past eight bytes ` + strings.Repeat("x", 40) + `é"}`,
	// Wanted values decodeFast builds itself, and the shapes it leaves to
	// encoding/json.
	`{"id":null,"rootless":null,"init_process_pid":null,"init_process_start":null,"created":null}`,
	`{"id":1}`,
	`{"id":"ü and 𝄞","config":{"cgroups":{"name":"\u00e9","parent":null,"path":"/é"}}}`,
	`{"rootless":true,"rootless":false,"config":{"cgroups":{"Systemd":null,"systemd":true}}}`,
	`{"rootless":1}`,
	`{"config":{"cgroups":{"Systemd":"true"}}}`,
	`{"init_process_pid":-0}`,
	`{"init_process_pid":-42}`,
	`{"init_process_pid":9223372036854775807}`,
	`{"init_process_pid":9223372036854775808}`,
	`{"init_process_pid":1e2}`,
	`{"init_process_pid":"7"}`,
	`{"init_process_start":""}`,
	`{"init_process_start":-1}`,
	`{"init_process_start":{}}`,
	`{"init_process_start":18446744073709551615}`,
	`{"created":"2026-11-30T06:08:20.123456789+02:00"}`,
	`{"created":1}`,
	`{"cgroup_paths":{"a":null,"b":"x","a":"y"},"namespace_paths":{}}`,
	`{"cgroup_paths":{"a":null},"namespace_paths":{"NEWPID":null,"NEWNET":""}}`,
	`{"cgroup_paths":{"esc\u0061ped":"v"}}`,
	`{"cgroup_paths":{"k":"v\n"}}`,
	`{"cgroup_paths":{"k":1}}`,
	`{"cgroup_paths":{"k":"v",}}`,
	`{"cgroup_paths":{"k":"v" "l":"w"}}`,
	`{"cgroup_paths":{,}}`,
	`{"cgroup_paths":{"k" : "v" , "l":null }}`,
	`{"cgroup_paths":[]}`,
	`{"cgroup_paths":"x"}`,
	`{"cgroup_paths":{"a":"1"},"Cgroup_Paths":{"b":"2"},"cgroup_paths":null,"cgroup_paths":{"c":"3"}}`,
	"{\"cgroup_paths\":{\"k\xff\":\"v\"}}",
	"{\"namespace_paths\":{\"k\":\"v\xfe\"}}",
	`{"config":{"namespaces":[]}}`,
	`{"config":{"namespaces":null}}`,
	`{"config":{"namespaces":[null,{"type":"NEWPID"}]}}`,
	`{"config":{"namespaces":[{"type":"A","path":"p"},{"type":"C"}],"namespaces":[{"type":"B"}]}}`,
	`{"config":{"namespaces":[{"TYPE":"A","Path":null,"x":[1,{"y":2}],"type":"NEWPID"}]}}`,
	`{"config":{"namespaces":[{"type":"NEWPID","path":"/proc/\u0031/ns/pid"}]}}`,
	`{"config":{"namespaces":[{"type":1}]}}`,
	`{"config":{"namespaces":[{"type":"A"},]}}`,
	`{"config":{"namespaces":{}}}`,
	// config.cgroups' limits: fractions, range, sign, null, case and repeats.
	`{"config":{"cgroups":{"memory":1073741824,"MEMORY_swap":-1,"pids_limit":1024,"cpu_shares":512,"blkio_weight":500}}}`,
	`{"config":{"cgroups":{"memory":1.5}}}`,
	`{"config":{"cgroups":{"memory":1e3}}}`,
	`{"config":{"cgroups":{"memory":"lots"}}}`,
	`{"config":{"cgroups":{"memory":99999999999999999999}}}`,
	`{"config":{"cgroups":{"blkio_weight":70000}}}`,
	`{"config":{"cgroups":{"cpu_shares":-1}}}`,
	`{"config":{"cgroups":{"cpu_quota":-1,"cpu_period":null}}}`,
	`{"config":{"cgroups":{"pids_limit":null}}}`,
	`{"config":{"cgroups":{"pids_limit":5,"pids_limit":null,"pids_limit":7}}}`,
	`{"config":{"cgroups":{"memory":-0}}}`,
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range edgeCases {
		t.Run("", func(t *testing.T) { sameDecode(t, []byte(in)) })
	}
	for name, b := range map[string][]byte{"runc 1.1.5": realState(t), "synthcell": synthState(t)} {
		t.Run(name, func(t *testing.T) {
			sameDecode(t, b)
			// The optimization must actually apply to real files.
			var s State
			if !decodeFast(b, &s, nil) {
				t.Fatal("decodeFast gave up on a real state file")
			}
			// A file cut short, as by a crash mid-write, is refused.
			sameDecode(t, b[:len(b)/2])
			if _, err := Decode(b[:len(b)/2]); err == nil {
				t.Fatal("truncated state decoded")
			}
		})
	}
}

func FuzzDecodeFast(f *testing.F) {
	for _, in := range edgeCases {
		f.Add([]byte(in))
	}
	f.Add(realState(f))
	f.Add(synthState(f))
	f.Fuzz(func(t *testing.T, b []byte) { sameDecode(t, b) })
}

// FuzzDecodeKnown decodes each input after a Garden-shaped state, in one
// scan's Known (fresh per input, so inputs do not affect each other):
// whatever the memo matches or not, the result is encoding/json's.
func FuzzDecodeKnown(f *testing.F) {
	base := synthState(f)
	for _, in := range edgeCases {
		f.Add([]byte(in))
	}
	f.Add(base)
	f.Add(realState(f))
	f.Fuzz(func(t *testing.T, b []byte) {
		k := new(Known)
		if _, err := decode(base, k); err != nil {
			t.Fatal(err)
		}
		sameDecodeKnown(t, b, k)
	})
}

// TestDecodeFastKnowsEveryField fails when State, Config or Cgroups gains a
// field that decodeFast would skip: every field is set, and both decoders
// must see all of them.
func TestDecodeFastKnowsEveryField(t *testing.T) {
	pids := int64(1024)
	full := State{
		ID: "c1", InitProcessPid: 42, InitProcessStart: 12345,
		Created: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC), Rootless: true,
		CgroupPaths:    map[string]string{"memory": "/sys/fs/cgroup/memory/garden/c1"},
		NamespacePaths: map[string]string{"NEWPID": "/proc/42/ns/pid"},
		Config: Config{
			Cgroups: &Cgroups{Path: "/garden/c1", Name: "c1", Parent: "garden.slice", ScopePrefix: "runc", Systemd: true,
				Devices:   json.RawMessage(`[{"type":97,"major":-1,"minor":-1,"permissions":"rwm","allow":false}]`),
				Resources: Resources{Memory: 1 << 30, MemorySwap: 2 << 30, PidsLimit: &pids, CpuShares: 512, CpuWeight: 59, CpuQuota: 50000, CpuPeriod: 100000, BlkioWeight: 300}},
			Namespaces: []Namespace{{Type: "NEWPID", Path: "/proc/1/ns/pid"}},
		},
	}
	for _, v := range []reflect.Value{reflect.ValueOf(full), reflect.ValueOf(full.Config), reflect.ValueOf(*full.Config.Cgroups), reflect.ValueOf(full.Config.Cgroups.Resources)} {
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				t.Fatalf("%s.%s is not set here: set it, and teach decodeFast to read it", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	sameDecode(t, b)
	var s State
	if !decodeFast(b, &s, nil) {
		t.Fatal("decodeFast gave up")
	}
	s.Created, full.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(s, full) {
		t.Fatalf("decodeFast read\n%+v\nwant\n%+v", s, full)
	}
}

// sameDecodeKnown is sameDecode for a decode that matches config values
// against k: it must give what encoding/json gives, or give up.
func sameDecodeKnown(t *testing.T, b []byte, k *Known) {
	t.Helper()
	want, werr := reference(b)
	got, gerr := decode(b, k)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("encoding/json error %v, decode error %v", werr, gerr)
	}
	if werr != nil {
		return
	}
	g, w := *got, *want
	if !g.Created.Equal(w.Created) {
		t.Fatalf("created %v, want %v", g.Created, w.Created)
	}
	g.Created, w.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("decode with known values\n%+v\nencoding/json\n%+v", g, w)
	}
}

// TestDecodeKnownValues: within one scan a config value seen before is
// matched by its bytes instead of validated again; a value that differs
// anywhere, validly or not, must decode as encoding/json has it, whichever
// of the two was seen first. Decode itself remembers nothing.
func TestDecodeKnownValues(t *testing.T) {
	b := synthState(t)
	k := new(Known)
	sameDecodeKnown(t, b, k)
	var names []string
	if l := k.l.Load(); l != nil {
		for _, kv := range *l {
			names = append(names, kv.name)
		}
	}
	if !slices.Contains(names, "seccomp") {
		t.Fatalf("remembered %q, want seccomp among them", names)
	}
	at := bytes.Index(b, []byte(`"name":"read"`))
	if at < 0 {
		t.Fatal("no read syscall in the seccomp list")
	}
	variant := func(old, new string) []byte {
		v := bytes.Clone(b[:at])
		return append(v, bytes.Replace(b[at:], []byte(old), []byte(new), 1)...)
	}
	for _, tc := range []struct {
		name string
		in   []byte
		ok   bool
	}{
		{"same", b, true},
		{"another syscall", variant(`"read"`, `"reaf"`), true},
		{"escaped", variant(`"read"`, `"re\u0061d"`), true},
		{"longer", variant(`"read"`, `"read","x":[1]`), true},
		{"shorter", variant(`{"action":4,"args":null,"errno_ret":null,"name":"read"},`, ``), true},
		{"invalid", variant(`"read"`, `"re`+"\x01"+`d"`), false},
		{"truncated", variant(`"name":"read"}`, `"name":"read"`), false},
		{"unclosed", b[:bytes.LastIndex(b, []byte(`"syscalls"`))+len(`"syscalls":[{"action":4`)], false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sameDecodeKnown(t, tc.in, k) // the original known
			if _, err := decode(tc.in, k); (err == nil) != tc.ok {
				t.Fatalf("decode error %v, want ok %v", err, tc.ok)
			}
			var s State
			if tc.ok && !decodeFast(tc.in, &s, k) {
				t.Fatal("decodeFast gave up")
			}
			other := new(Known) // the variant known, then the original
			sameDecodeKnown(t, tc.in, other)
			sameDecodeKnown(t, b, other)
		})
	}
	// A member that differs per container does not fill the list.
	k = new(Known)
	for _, name := range []string{`"reaa"`, `"reab"`, `"reac"`, `"read"`} {
		sameDecodeKnown(t, variant(`"read"`, name), k)
	}
	n := 0
	for _, kv := range *k.l.Load() {
		if kv.name == "seccomp" {
			n++
		}
	}
	if n != maxPerName {
		t.Fatalf("%d seccomp lists remembered, want %d", n, maxPerName)
	}
}
