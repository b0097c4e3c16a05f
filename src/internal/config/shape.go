package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

var durationType = reflect.TypeOf(Duration{})

// judgeShape walks the file as decoded JSON beside the Go type it decodes
// into, and names every key the type lacks and every value of the wrong
// JSON type, where encoding/json stops at the first. Keys match exactly
// (encoding/json would also take "Supervisor" for "supervisor"): the job
// renders them so, and a key spelled otherwise is a hand edit to refuse.
// null is the zero value, as encoding/json reads it.
func (ps *problems) judgeShape(v any, t reflect.Type, key string) {
	if v == nil || t == durationType || t == osvRecordType { // judged by their own rules
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		ps.judgeShape(v, t.Elem(), key)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			ps.add(key, jsonText(v), "want an object")
			return
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				fields[name] = t.Field(i).Type
			}
		}
		for _, k := range sortedKeys(m) {
			ft, ok := fields[k]
			if !ok {
				ps.add(join(key, k), "", "unknown key (known: %s)", strings.Join(sortedKeys(fields), ", "))
				continue
			}
			ps.judgeShape(m[k], ft, join(key, k))
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			ps.add(key, jsonText(v), "want an object of %s", kindName(t.Elem()))
			return
		}
		for _, k := range sortedKeys(m) {
			ps.judgeShape(m[k], t.Elem(), join(key, k))
		}
	case reflect.Slice:
		l, ok := v.([]any)
		if !ok {
			ps.add(key, jsonText(v), "want a list of %s", kindName(t.Elem()))
			return
		}
		for i, e := range l {
			ps.judgeShape(e, t.Elem(), fmt.Sprintf("%s[%d]", key, i))
		}
	default:
		if !scalarFits(v, t.Kind()) {
			ps.add(key, jsonText(v), "want %s", kindName(t))
		}
	}
}

func scalarFits(v any, k reflect.Kind) bool {
	switch k {
	case reflect.String:
		_, ok := v.(string)
		return ok
	case reflect.Bool:
		_, ok := v.(bool)
		return ok
	case reflect.Int:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "a whole number"
	case reflect.Pointer:
		return kindName(t.Elem())
	case reflect.Slice:
		return "lists"
	}
	return "objects"
}

func join(key, k string) string {
	if key == "" {
		return k
	}
	return key + "." + k
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// jsonText is a decoded value as it was written, cut for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
