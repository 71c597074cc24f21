// Package bounded keeps text within the sizes the apiserver accepts or that stay readable:
// an Event's note (a longer one is refused, and the Event lost; condition messages
// repeated in Events, a few clusters named each with why, can be longer) and quotes of
// other components' messages inside ours; and printable, so that text another cluster
// reports cannot break reading the hub object it lands in.
package bounded

import (
	"strings"
	"unicode/utf8"
)

// MaxEventNote is the longest note an Event may have.
const MaxEventNote = 1024

// EventNote returns note, or, when it is too long, its start (never cut inside a character)
// and where the whole message is: seeWhere, such as "kubectl describe gitopscluster".
func EventNote(note, seeWhere string) string {
	if len(note) <= MaxEventNote {
		return note
	}
	rest := " … (the whole message: " + seeWhere + ")"
	return cutAtRune(note, MaxEventNote-len(rest)) + rest
}

// Cut returns s, or at most n bytes of it (never splitting a character) and an ellipsis.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutAtRune(s, n) + "…"
}

// cutAtRune returns at most n bytes of s, never splitting a UTF-8 character.
func cutAtRune(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Printable returns s with every character YAML cannot carry (the C0 and C1 controls but
// tab, newline, carriage return and NEL; DEL; U+FFFE and U+FFFF; bytes that are not UTF-8)
// replaced by U+FFFD. JSON carries them, so the apiserver stores them, but then every
// `kubectl get -o yaml` of the object fails ("control characters are not allowed"): text
// another cluster reports must pass through here before it reaches a hub object.
func Printable(s string) string {
	if utf8.ValidString(s) && isPrintable(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if !printableRune(r) {
			r = utf8.RuneError
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isPrintable(s string) bool {
	for _, r := range s {
		if !printableRune(r) {
			return false
		}
	}
	return true
}

// printableRune is YAML's set of printable characters (YAML 1.2, section 5.1). A byte that
// is not UTF-8 ranges as utf8.RuneError, which is printable: Printable writes it as U+FFFD.
func printableRune(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r', r == 0x85:
		return true
	case r >= 0x20 && r <= 0x7e, r >= 0xa0 && r <= 0xd7ff, r >= 0xe000 && r <= 0xfffd, r >= 0x10000 && r <= 0x10ffff:
		return true
	}
	return false
}
