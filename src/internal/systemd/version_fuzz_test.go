package systemd

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseVersion: the Manager's Version property as any distribution
// spells it.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"252.38-1~deb12u1", "v256", "245 (245.4-4ubuntu3)", "", "v", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseVersion(s)
		if err != nil {
			return
		}
		if n < 0 || !strings.Contains(s, strconv.Itoa(n)) && strings.TrimLeft(s, " \t\nv0") != "" {
			t.Fatalf("ParseVersion(%q) = %d", s, n)
		}
	})
}
