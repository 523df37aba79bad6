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
	}{
		{"missing target", "0-0\n1-\n", false, 2},
		{"no separator", "0-0 1-1\n\n12\n", false, 3},
		{"negative position", "0--1\n", false, 1},
		{"letters", "0-0 a-b\n", false, 1},
		{"zero when one-based", "1-1\n0-1\n", true, 2},
		{"sign", "0-+1\n", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadPharaoh(strings.NewReader(tt.text), "gold.txt", tt.oneBased)
			var pe *ParseError
			if !errors.As(err, &pe) || pe.File != "gold.txt" || pe.Line != tt.line || !errors.Is(err, ErrBadLink) {
				t.Fatalf("ReadPharaoh(%q) error = %v, want a ParseError at gold.txt line %d", tt.text, err, tt.line)
			}
			if !strings.Contains(err.Error(), "gold.txt line") {
				t.Errorf("message %q does not name the file and line", err)
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
