package config

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzParse: the rendered job config. Parse must never panic, and whatever
// it accepts must survive a marshal round trip unchanged: the config
// cellguard acts on is the one the operator wrote.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("testdata/seeds/cell_rendered.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"daemons":[{"name":"garden","start":"/bin/true","start_timeout":1e300}]}`))
	f.Add([]byte(`{"daemons":[{"name":"garden","start":"/bin/true","stop_timeout":"-5s"}]} {}`))
	f.Add([]byte(`{"daemons":[{"name":"a","start":"/x","type":"forking"}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b, "fuzz", testIDs)
		if err != nil {
			return
		}
		if err := c.Validate(testIDs); err != nil {
			t.Fatalf("Parse accepted what Validate refuses: %v", err)
		}
		for _, d := range c.Daemons {
			if d.StartTimeout.Duration < 0 || d.StopTimeout.Duration < 0 {
				t.Fatalf("negative timeout accepted from %q: %+v", b, d)
			}
		}
		if c.Validator.RuncInitMaxAge.Duration < 0 {
			t.Fatalf("negative runc_init_max_age accepted from %q", b)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal accepted config: %v", err)
		}
		back, err := Parse(out, "round trip", testIDs)
		if err != nil {
			t.Fatalf("round trip of %q: %v\n%s", b, err, out)
		}
		if !reflect.DeepEqual(normalize(c), normalize(back)) {
			t.Fatalf("round trip of %q changed the config:\n%+v\n%+v", b, c, back)
		}
	})
}

// normalize maps empty and nil collections alike: JSON "[]" and an absent
// key mean the same to every consumer.
func normalize(c *Config) Config {
	n := *c
	if len(n.Daemons) == 0 {
		n.Daemons = nil
	}
	if len(n.Sysctl.Set) == 0 {
		n.Sysctl.Set = nil
	}
	if len(n.Sysctl.Remove) == 0 {
		n.Sysctl.Remove = nil
	}
	v := n.Validator
	if len(v.RuntimeRoots) == 0 {
		v.RuntimeRoots = nil
	}
	if len(v.Namespaces) == 0 {
		v.Namespaces = nil
	}
	if len(v.RuntimeBinaries) == 0 {
		v.RuntimeBinaries = nil
	}
	if len(v.Ignore) == 0 {
		v.Ignore = nil
	}
	if len(v.Blocking) == 0 {
		v.Blocking = nil
	}
	if len(v.Daemons) == 0 {
		v.Daemons = nil
	}
	if len(v.ExtraCgroupRoots) == 0 {
		v.ExtraCgroupRoots = nil
	}
	n.Validator = v
	return n
}

// Found by FuzzParse: 1e300 seconds wrapped to a negative time.Duration and
// "-5s" passed `config check`, only to fail later at unit install.
func TestDurationRefusesNegativeAndOverflow(t *testing.T) {
	for _, in := range []string{`"-5s"`, `-1`, `1e300`, `9223372037`, `true`, `"2562048h"`} {
		_, err := Parse([]byte(`{"watch":{"period":`+in+`}}`), "test", testIDs)
		if err == nil || !strings.Contains(err.Error(), "watch.period "+in+": ") {
			t.Errorf("duration %s: %v, want it refused under watch.period", in, err)
		}
	}
	for in, want := range map[string]time.Duration{`"30s"`: 30 * time.Second, `45`: 45 * time.Second, `""`: 0, `null`: 0, `0.5`: 500 * time.Millisecond} {
		c, err := Parse([]byte(`{"watch":{"period":`+in+`}}`), "test", testIDs)
		if err != nil || c.Watch.Period.Duration != want {
			t.Errorf("duration %s: %v; want %v", in, err, want)
			continue
		}
		if b, _ := json.Marshal(c.Watch.Period); in != `null` && string(b) != in {
			t.Errorf("duration %s written back as %s", in, b)
		}
	}
}
