package align

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParsePharaoh(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		oneBased bool
		want     []Link
	}{
		{"empty line has no links", "", false, []Link{}},
		{"sure and possible links", "0-0 2p1  1-3", false, []Link{l(0, 0), {Src: 2, Tgt: 1, Possible: true}, l(1, 3)}},
		{"one-based positions are shifted", "1-1 3p2", true, []Link{l(0, 0), {Src: 2, Tgt: 1, Possible: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParsePharaoh(tt.line, tt.oneBased)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParsePharaoh(%q) = %v, %v; want %v", tt.line, got, err, tt.want)
			}
		})
	}
}

func TestReadPharaohNamesFileAndLineOfBadLinks(t *testing.T) {
	tests := []struct {
		name, text string
		oneBased   bool
		line       int
		cause      error
		says       string
	}{
		{"missing target", "0-0\n1-\n", false, 2, ErrBadLink, "not a link"},
		{"no separator", "0-0 1-1\n\n12\n", false, 3, ErrBadLink, "not a link"},
		{"negative position", "0--1\n", false, 1, ErrBadLink, "not a link"},
		{"letters", "0-0 a-b\n", false, 1, ErrBadLink, "not a link"},
		{"zero when one-based", "1-1\n0-1\n", true, 2, ErrZeroPosition, `"0-1": position 0 in a one-based file`},
		{"0-0 when one-based", "0-0\n", true, 1, ErrZeroPosition, `"0-0": position 0 in a one-based file`},
		{"sign", "0-+1\n", false, 1, ErrBadLink, "not a link"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPharaoh(strings.NewReader(tt.text), "gold.txt", tt.oneBased)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "gold.txt" || pe.Line != tt.line || !errors.Is(err, tt.cause) {
				t.Fatalf("ReadPharaoh(%q) error = %v, want a ParseError at gold.txt line %d caused by %v", tt.text, err, tt.line, tt.cause)
			}
			if !strings.Contains(err.Error(), "gold.txt line") || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("message %q does not name the file and line, or does not say %q", err, tt.says)
			}
		})
	}
}

func TestPharaohRoundTripsThroughTheReader(t *testing.T) {
	corpus := [][]Link{
		{l(0, 0), l(1, 2), {Src: 2, Tgt: 1, Possible: true}},
		{},
		{l(10, 11), {Src: 3, Tgt: 0, Possible: true}},
	}
	for _, oneBased := range []bool{false, true} {
		var text strings.Builder
		for _, links := range corpus {
			text.WriteString(FormatPharaoh(links, oneBased) + "\n")
		}
		got, err := ReadPharaoh(strings.NewReader(text.String()), "rt", oneBased)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, corpus, slices.Equal) {
			t.Errorf("oneBased=%v: wrote %q, read back %v, want %v", oneBased, text.String(), got, corpus)
		}
	}
	if got := FormatPharaoh(corpus[0], true); got != "1-1 2-3 3p2" {
		t.Errorf("one-based format = %q", got)
	}
}

// TestCheckLengthsNamesTheLinkBeyondItsSentence: a gold link past its sentence pair's words (999-999) counted as
// a sure link no prediction could hit; it is an error naming the file, the line, the link as written and the
// two lengths.
func TestCheckLengthsNamesTheLinkBeyondItsSentence(t *testing.T) {
	gold := [][]Link{{l(0, 0), l(2, 1)}, {}, {l(1, 1), l(999, 999)}}
	srcLens, tgtLens := []int{3, 0, 4}, []int{2, 0, 5}
	tests := []struct {
		name     string
		gold     [][]Link
		oneBased bool
		line     int
		says     string
	}{
		{"fits", gold[:2], false, 0, ""},
		{"999-999", gold, false, 3, "999-999, but the pair has 4 source and 5 target words"},
		{"one-based as written", gold, true, 3, "1000-1000, but the pair has 4 source and 5 target words"},
		{"target one too far", [][]Link{{l(0, 2)}, {}, {}}, false, 1, "0-2, but the pair has 3 source and 2 target words"},
		{"source one too far", [][]Link{{l(3, 0)}, {}, {}}, false, 1, "3-0, but the pair has 3 source"},
		{"a link in an empty pair", [][]Link{{}, {{Src: 0, Tgt: 0, Possible: true}}, {}}, false, 2, "0p0, but the pair has 0 source and 0 target words"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := append(slices.Clone(tt.gold), make([][]Link, 3-len(tt.gold))...)
			err := CheckLengths(g, srcLens, tgtLens, "gold.txt", tt.oneBased)
			if tt.line == 0 {
				if err != nil {
					t.Fatalf("CheckLengths = %v, want nil", err)
				}
				return
			}
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "gold.txt" || pe.Line != tt.line || !errors.Is(err, ErrOutOfRange) || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("CheckLengths = %v, want gold.txt line %d saying %q", err, tt.line, tt.says)
			}
		})
	}
}
