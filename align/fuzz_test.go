package align

import (
	"bufio"
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzReadPharaoh reads any bytes as a gold alignment file, 0- or 1-based. It fails with a *ParseError naming
// the file and a line the file has, for a field that is not a link or a position 0 in a one-based file; or it
// returns one list of links per line, with non-negative positions, that FormatPharaoh writes back to the same
// links. CheckLengths accepts the links against lengths just long enough, and names the line of the first link
// past a sentence one word shorter.
func FuzzReadPharaoh(f *testing.F) {
	for _, seed := range []string{"", "\n", "0-0 1-1 2p3\n", "0-0\n\n1-2 2p1\n", "1-1 3p2\n", "0-0\n", "999-999\n",
		"0--1\n", "0-+1\n", "a-b\n", "12\n", "1-\n", "0-0\r\n1-1\r\n", "9223372036854775807-0\n", "99999999999999999999-1\n",
		"0-0 0-0 0p0\n", " \t 3-4\t5p6 \n", "0p-1\n", "-0-0\n", "0-0x\n"} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, text []byte, oneBased bool) {
		lines := 0
		sc := bufio.NewScanner(bytes.NewReader(text))
		sc.Buffer(nil, 16*1024*1024)
		for sc.Scan() {
			lines++
		}
		gold, err := ReadPharaoh(bytes.NewReader(text), "gold.txt", oneBased)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "gold.txt" || pe.Line < 1 || pe.Line > lines || !strings.Contains(err.Error(), "gold.txt line") {
				t.Fatalf("error %v does not name gold.txt and one of its %d lines", err, lines)
			}
			if !errors.Is(err, ErrBadLink) && !(oneBased && errors.Is(err, ErrZeroPosition)) {
				t.Fatalf("error %v has another cause than a bad link or a 0 in a one-based file", err)
			}
			return
		}
		if len(gold) != lines {
			t.Fatalf("%d lines of links from %d lines", len(gold), lines)
		}
		var again strings.Builder
		srcLens, tgtLens := make([]int, len(gold)), make([]int, len(gold))
		huge := false // a position of math.MaxInt: no length holds it
		for k, links := range gold {
			for _, l := range links {
				if l.Src < 0 || l.Tgt < 0 {
					t.Fatalf("line %d: link %+v has a negative position", k+1, l)
				}
				huge = huge || l.Src+1 < 0 || l.Tgt+1 < 0
				srcLens[k], tgtLens[k] = max(srcLens[k], l.Src+1), max(tgtLens[k], l.Tgt+1)
			}
			again.WriteString(FormatPharaoh(links, oneBased) + "\n")
		}
		back, err := ReadPharaoh(strings.NewReader(again.String()), "again", oneBased)
		if err != nil || !slices.EqualFunc(back, gold, slices.Equal) {
			t.Fatalf("links %v written as %q read back as %v, %v", gold, again.String(), back, err)
		}
		if huge {
			return
		}
		if err := CheckLengths(gold, srcLens, tgtLens, "gold.txt", oneBased); err != nil {
			t.Fatalf("CheckLengths against the longest positions: %v", err)
		}
		for k, links := range gold {
			if len(links) == 0 {
				continue
			}
			shorter := slices.Clone(srcLens)
			shorter[k]--
			var pe *ParseError
			if err := CheckLengths(gold, shorter, tgtLens, "gold.txt", oneBased); !errors.As(err, &pe) || pe.Line != k+1 || !errors.Is(err, ErrOutOfRange) {
				t.Fatalf("line %d's source one word shorter: %v, want an error at line %d", k+1, err, k+1)
			}
			return
		}
	})
}
