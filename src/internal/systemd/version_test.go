package systemd

import "testing"

func TestParseVersion(t *testing.T) {
	testCases := []struct {
		in   string
		want int
	}{
		{"systemd 252 (252.39-1~deb12u2)\n+PAM +AUDIT", 252},
		{"252.39-1~deb12u2", 252},
		{"v256.5", 256},
		{"256~rc3", 256},
		{"systemd 258 (258.1-2)", 258},
		{"245 (245.4-4ubuntu3)", 245},
		{"systemd", 0},
		{"systemdx 252", 0},
		{"", 0},
		{"not a version", 0},
	}
	for _, tc := range testCases {
		got, err := ParseVersion(tc.in)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}
