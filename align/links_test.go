package align

import (
	"slices"
	"strings"
	"testing"
)

func l(src, tgt int) Link { return Link{Src: src, Tgt: tgt} }

func TestHardLinksNeverEOSOrPadding(t *testing.T) {
	// Two output words then </s>; three real source words and one padding column. The </s> row and the padding
	// column hold the largest weights, so reading either would show up.
	attention := [][]float32{
		{0.1, 0.2, 0.05, 0.9},
		{0.5, 0.3, 0.2, 0.9},
		{0.0, 0.0, 0.1, 0.9},
	}
	tests := []struct {
		name      string
		threshold float64
		want      []Link
	}{
		{"argmax gives one link per output word", 0, []Link{l(0, 1), l(1, 0)}},
		{"threshold keeps every weight at or above it", 0.2, []Link{l(0, 1), l(1, 0), l(1, 1), l(2, 1)}},
		{"a high threshold can leave words unaligned", 0.45, []Link{l(0, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hard(attention, 3, 2, tt.threshold); !slices.Equal(got, tt.want) {
				t.Errorf("Hard = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHardArgmaxTakesFirstOfATie(t *testing.T) {
	if got := Hard([][]float32{{0.25, 0.5, 0.5}}, 3, 1, 0); !slices.Equal(got, []Link{l(1, 0)}) {
		t.Errorf("Hard = %v, want [1-0]", got)
	}
}

func TestHardPanicsOnShortAttention(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Hard of 1 row for 2 target words did not panic")
		}
	}()
	Hard([][]float32{{1}}, 1, 2, 0)
}

func TestSymmetrizeHandCases(t *testing.T) {
	tests := []struct {
		name             string
		forward, reverse []Link
		method           Symmetrization
		want             []Link
	}{
		{"intersection keeps shared links",
			[]Link{l(0, 0), l(1, 1), l(2, 1)}, []Link{l(0, 0), l(1, 1), l(2, 2)}, Intersection,
			[]Link{l(0, 0), l(1, 1)}},
		{"union keeps all links once",
			[]Link{l(0, 0), l(1, 1), l(2, 1)}, []Link{l(0, 0), l(1, 1), l(2, 2)}, Union,
			[]Link{l(0, 0), l(1, 1), l(2, 1), l(2, 2)}},
		{"forward returns the forward links",
			[]Link{l(2, 1), l(0, 0)}, []Link{l(1, 1)}, Forward,
			[]Link{l(0, 0), l(2, 1)}},
		// Intersection {00,11}; (2,1) neighbours (1,1) and covers unaligned source 2; then (2,2) neighbours
		// (1,1) diagonally and covers unaligned target 2.
		{"grow-diag adds neighbours that cover an unaligned word",
			[]Link{l(0, 0), l(1, 1), l(2, 1)}, []Link{l(0, 0), l(1, 1), l(2, 2)}, GrowDiag,
			[]Link{l(0, 0), l(1, 1), l(2, 1), l(2, 2)}},
		// Every word is aligned by the intersection, so (0,2) of the union is never added.
		{"grow-diag-final skips links between aligned words",
			[]Link{l(0, 0), l(1, 1), l(2, 2), l(0, 2)}, []Link{l(0, 0), l(1, 1), l(2, 2)}, GrowDiagFinal,
			[]Link{l(0, 0), l(1, 1), l(2, 2)}},
		// (3,2) neighbours no accepted link, so grow-diag leaves it out; final adds it (source 3 unaligned).
		{"grow-diag leaves out isolated links",
			[]Link{l(0, 0), l(1, 1), l(3, 2)}, []Link{l(0, 0), l(1, 1)}, GrowDiag,
			[]Link{l(0, 0), l(1, 1)}},
		{"final adds isolated links that cover an unaligned word",
			[]Link{l(0, 0), l(1, 1), l(3, 2)}, []Link{l(0, 0), l(1, 1)}, GrowDiagFinal,
			[]Link{l(0, 0), l(1, 1), l(3, 2)}},
		// Nothing grows from (0,0). Final takes the forward (3,2) (source 3 unaligned), then the reverse (2,2)
		// (source 2 unaligned, although target 2 now is) and (3,3) (target 3 unaligned).
		{"final takes reverse links too",
			[]Link{l(0, 0), l(3, 2)}, []Link{l(0, 0), l(2, 2), l(3, 3)}, GrowDiagFinal,
			[]Link{l(0, 0), l(2, 2), l(3, 2), l(3, 3)}},
		// Nothing grows from (0,0): the forward (2,3) and the reverse (3,3) neighbour no accepted link. Final
		// takes (2,3) (source 2 unaligned), then (3,3) (source 3 unaligned, although target 3 now is) ...
		{"final adds a link that covers one unaligned word",
			[]Link{l(0, 0), l(2, 3)}, []Link{l(0, 0), l(3, 3)}, GrowDiagFinal,
			[]Link{l(0, 0), l(2, 3), l(3, 3)}},
		// ... while final-and takes (2,3) (source 2 and target 3 unaligned) but not (3,3) (target 3 aligned).
		{"final-and adds only links between two unaligned words",
			[]Link{l(0, 0), l(2, 3)}, []Link{l(0, 0), l(3, 3)}, GrowDiagFinalAnd,
			[]Link{l(0, 0), l(2, 3)}},
		// The forward links come first: with the sides swapped, (3,3) wins and (2,3) is left out.
		{"final-and takes the forward links first",
			[]Link{l(0, 0), l(3, 3)}, []Link{l(0, 0), l(2, 3)}, GrowDiagFinalAnd,
			[]Link{l(0, 0), l(3, 3)}},
		// Growing comes before final-and: (1,0) neighbours (0,0) and covers source 1, so it is in although
		// target 0 is aligned.
		{"final-and keeps what grow-diag added",
			[]Link{l(0, 0), l(1, 0), l(2, 2)}, []Link{l(0, 0), l(1, 1)}, GrowDiagFinalAnd,
			[]Link{l(0, 0), l(1, 0), l(1, 1), l(2, 2)}},
		{"reverse returns the reverse links",
			[]Link{l(2, 1), l(0, 0)}, []Link{l(1, 1), l(0, 2)}, Reverse,
			[]Link{l(0, 2), l(1, 1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Symmetrize(tt.forward, tt.reverse, tt.method); !slices.Equal(got, tt.want) {
				t.Errorf("Symmetrize(%s) = %v, want %v", tt.method, got, tt.want)
			}
		})
	}
}

func TestSymmetrizationValidateRejectsUnknownNames(t *testing.T) {
	for _, bad := range []Symmetrization{"grow-diag-and", "", "Intersection"} {
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "want grow-diag-final-and, grow-diag-final") {
			t.Errorf("Validate(%q) = %v, want an error listing the methods", bad, err)
		}
	}
	for _, m := range Symmetrizations() {
		if err := m.Validate(); err != nil {
			t.Errorf("Validate(%s) = %v", m, err)
		}
	}
}

func TestTransposeSwapsSides(t *testing.T) {
	if got := Transpose([]Link{l(0, 2), {Src: 1, Tgt: 3, Possible: true}}); !slices.Equal(got, []Link{l(2, 0), {Src: 3, Tgt: 1, Possible: true}}) {
		t.Errorf("Transpose = %v", got)
	}
}
