// Package plural writes counts of things in English, as messages show them: "1 sentence", "2 sentences".
package plural

import "strconv"

// Count returns n and noun, in the plural unless n is 1 or -1. The plural is noun + "s", or the given form for
// a noun that takes another ("batch", "batches").
func Count(n int, noun string, pluralForm ...string) string {
	return strconv.Itoa(n) + " " + Noun(n, noun, pluralForm...)
}

// Noun returns noun in the number that n calls for (see Count), without n.
func Noun(n int, noun string, pluralForm ...string) string {
	switch {
	case n == 1 || n == -1:
		return noun
	case len(pluralForm) > 0:
		return pluralForm[0]
	default:
		return noun + "s"
	}
}
