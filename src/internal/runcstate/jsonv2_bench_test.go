//go:build goexperiment.jsonv2

package runcstate

import (
	"bytes"
	"encoding/json/jsontext"
	jsonv2 "encoding/json/v2"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The maintained alternatives in the standard library (Go 1.26, behind
// GOEXPERIMENT=jsonv2): json/v2's Unmarshal, and a jsontext decoder that,
// like decodeFast, reads only State's members and skips (validating) the
// rest. Run: GOEXPERIMENT=jsonv2 go test -run '^$' -bench Decode.
func init() {
	decoders = append(decoders,
		struct {
			name   string
			decode func([]byte) (*State, error)
		}{"json-v2", func(b []byte) (*State, error) {
			var s State
			return &s, jsonv2.Unmarshal(b, &s, jsonv2.MatchCaseInsensitiveNames(true))
		}},
		struct {
			name   string
			decode func([]byte) (*State, error)
		}{"jsontext", decodeJSONText})
}

func decodeJSONText(b []byte) (*State, error) {
	var s State
	dec := jsontext.NewDecoder(bytes.NewReader(b))
	err := members(dec, func(name string) error {
		switch name {
		case "id":
			return jsonv2.UnmarshalDecode(dec, &s.ID)
		case "init_process_pid":
			return jsonv2.UnmarshalDecode(dec, &s.InitProcessPid)
		case "init_process_start":
			return jsonv2.UnmarshalDecode(dec, &s.InitProcessStart)
		case "created":
			return jsonv2.UnmarshalDecode(dec, &s.Created)
		case "rootless":
			return jsonv2.UnmarshalDecode(dec, &s.Rootless)
		case "cgroup_paths":
			return jsonv2.UnmarshalDecode(dec, &s.CgroupPaths)
		case "namespace_paths":
			return jsonv2.UnmarshalDecode(dec, &s.NamespacePaths)
		case "config":
			return members(dec, func(name string) error {
				switch name {
				case "cgroups":
					return jsonv2.UnmarshalDecode(dec, &s.Config.Cgroups)
				case "namespaces":
					return jsonv2.UnmarshalDecode(dec, &s.Config.Namespaces)
				}
				return dec.SkipValue()
			})
		}
		return dec.SkipValue()
	})
	return &s, err
}

// members reads one object, calling fn with the decoder at each member's
// value (names matched as encoding/json does, case-insensitively).
func members(dec *jsontext.Decoder, fn func(name string) error) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("want an object, got %v", tok.Kind())
	}
	for dec.PeekKind() != '}' {
		name, err := dec.ReadToken()
		if err != nil {
			return err
		}
		if err := fn(strings.ToLower(name.String())); err != nil {
			return err
		}
	}
	_, err = dec.ReadToken()
	return err
}

// The jsontext decoder agrees with Decode on the benchmark's file.
func TestJSONTextDecoderAgrees(t *testing.T) {
	raw := synthState(t)
	want, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range decoders {
		got, err := d.decode(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v\n%+v\nwant %+v", d.name, err, got, want)
		}
	}
}
