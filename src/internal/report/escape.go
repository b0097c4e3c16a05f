package report

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape makes a string that may come from a tenant (a comm, argv, a
// cgroup or interface name, a path) safe to print to an operator's
// terminal or to a line-oriented log: it stays on one line and steers
// nothing. Every C0 control and DEL becomes \xHH (\t, \n and \r as such),
// every C1 control, bidi control (U+061C, U+200E-U+200F, U+202A-U+202E,
// U+2066-U+2069) and line or paragraph separator \uHHHH, every byte of
// invalid UTF-8 \xHH. Everything else, backslashes included, is kept as
// is, so a systemd unit's own \x2d escapes read as systemd prints them;
// the JSON report carries the raw string.
func Escape(s string) string {
	i := 0 // invalid UTF-8: every byte is looked at
	if utf8.ValidString(s) {
		if i = strings.IndexFunc(s, unsafeRune); i < 0 {
			return s
		}
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for s = s[i:]; s != ""; {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// unsafeRune is a valid rune Escape rewrites.
func unsafeRune(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Bidi_Control, r)
}

// EscapeJSON rewrites, in JSON text, the runes encoding/json leaves raw
// that Escape would not (DEL, C1 and bidi controls) as \uHHHH: the same
// JSON value, safe to view in a terminal. JSON has them only inside
// strings, where \uHHHH means the same rune. C0 controls are already
// escaped by encoding/json, and invalid UTF-8 replaced.
func EscapeJSON(b []byte) []byte {
	if !bytes.ContainsFunc(b, rawInJSON) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if rawInJSON(r) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// rawInJSON is a rune Escape rewrites and encoding/json does not.
func rawInJSON(r rune) bool { return r >= 0x7f && unsafeRune(r) }
