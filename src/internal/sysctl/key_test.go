package sysctl

import (
	"errors"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	testCases := []struct {
		name, in, path, dotted string
	}{
		{"dotted", "fs.inotify.max_user_watches", "fs/inotify/max_user_watches", "fs.inotify.max_user_watches"},
		{"slashes", "fs/inotify/max_user_watches", "fs/inotify/max_user_watches", "fs.inotify.max_user_watches"},
		{"dash in name", "fs.pipe-user-pages-soft", "fs/pipe-user-pages-soft", "fs.pipe-user-pages-soft"},
		{"vlan dotted", "net.ipv4.conf.eno2/100.rp_filter", "net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"},
		{"vlan slashes", "net/ipv4/conf/eno2.100/rp_filter", "net/ipv4/conf/eno2.100/rp_filter", "net.ipv4.conf.eno2/100.rp_filter"},
		{"spaces trimmed", "  kernel.pid_max ", "kernel/pid_max", "kernel.pid_max"},
		{"single component", "foo", "foo", "foo"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKey(tc.in)
			if err != nil {
				t.Fatalf("ParseKey(%q): %v", tc.in, err)
			}
			if k.Path() != tc.path || k.Name() != tc.dotted {
				t.Fatalf("ParseKey(%q) = path %q name %q, want %q %q", tc.in, k.Path(), k.Name(), tc.path, tc.dotted)
			}
		})
	}
}

func TestParseKeyRefuses(t *testing.T) {
	testCases := []struct{ name, in string }{
		{"empty", ""},
		{"blank", "   "},
		{"dotdot dotted", "../etc/passwd"},
		{"dotdot slashes", "fs/../../etc/shadow"},
		{"dotdot inside dotted", "kernel/../../../etc/shadow"},
		{"dot component", "fs/./inotify"},
		{"empty component", "fs..inotify"},
		{"leading slash", "/proc/sys/kernel/pid_max"},
		{"trailing separator", "kernel.pid_max."},
		{"glob", "fs.inotify.*"},
		{"question mark", "kernel.pid_ma?"},
		{"leading dash", "-kernel.pid_max"},
		{"space inside", "kernel.pid max"},
		{"shell", "kernel.pid_max;reboot"},
		{"newline", "kernel.pid_max\nkernel.panic"},
		{"equals", "kernel.pid_max=1"},
		{"unicode", "kernel.pïd_max"},
		{"too long", strings.Repeat("a.", 150) + "b"},
	}
	for _, tc := range testCases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := ParseKey(tc.in)
			if err == nil {
				t.Fatalf("ParseKey(%q) = %q, want an error", tc.in, k.Path())
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseKey(%q) error %v does not wrap ErrInvalid", tc.in, err)
			}
		})
	}
}

func TestNormalizeValue(t *testing.T) {
	for in, want := range map[string]string{
		"32768\t60999\n":        "32768 60999",
		"  250  32000 32\t128 ": "250 32000 32 128",
		"1\n":                   "1",
		"":                      "",
	} {
		if got := NormalizeValue(in); got != want {
			t.Errorf("NormalizeValue(%q) = %q, want %q", in, got, want)
		}
	}
}
