// Package bounded keeps text within the sizes the apiserver accepts or that stay readable:
// an Event's note (a longer one is refused, and the Event lost; condition messages
// repeated in Events, a few clusters named each with why, can be longer) and quotes of
// other components' messages inside ours.
package bounded

import "unicode/utf8"

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
