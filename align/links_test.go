package align

import (
	"slices"
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
		{"none returns the forward links",
			[]Link{l(2, 1), l(0, 0)}, []Link{l(1, 1)}, NoSymmetrizing,
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
	if err := Symmetrization("grow-diag-final-and").Validate(); err == nil {
		t.Error("Validate accepted grow-diag-final-and")
	}
	if err := GrowDiagFinal.Validate(); err != nil {
		t.Errorf("Validate(grow-diag-final) = %v", err)
	}
}

func TestTransposeSwapsSides(t *testing.T) {
	if got := Transpose([]Link{l(0, 2), {Src: 1, Tgt: 3, Possible: true}}); !slices.Equal(got, []Link{l(2, 0), {Src: 3, Tgt: 1, Possible: true}}) {
		t.Errorf("Transpose = %v", got)
	}
}
