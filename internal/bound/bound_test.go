package bound

import (
	"math"
	"strings"
	"testing"
)

// TestRangesRefuseNonFiniteNumbers: no range, not even one without an upper bound, holds NaN or ±Inf; the
// messages say the value, the range and the note.
func TestRangesRefuseNonFiniteNumbers(t *testing.T) {
	for _, r := range []Range{AtLeast(0, ""), Between(-1, 1, ""), Fraction(""), {Min: math.Inf(-1), Max: math.Inf(1)}} {
		for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			if r.Contains(x) || r.Check("k", x) == nil {
				t.Errorf("%v holds %v", r, x)
			}
		}
	}
	r := Range{Min: 5, Max: math.Inf(1), Zero: true, Note: "0: none"}
	for x, ok := range map[float64]bool{0: true, 4: false, 5: true, 1e300: true, -1: false} {
		if r.Contains(x) != ok {
			t.Errorf("%v holds %v: %v, want %v", r, x, !ok, ok)
		}
	}
	if err := r.CheckInt("n", 3); err == nil || err.Error() != "n is 3; want 0 or at least 5 (0: none)" {
		t.Errorf("CheckInt: %v", err)
	}
	if err := Between(1, 10, "").CheckInt("n", math.MaxInt64); err == nil || !strings.Contains(err.Error(), "between 1 and 10") {
		t.Errorf("CheckInt of the largest int64: %v", err)
	}
	if err := Between(0, 1, "0: none").Check("w", 1e308); err == nil || err.Error() != "w is 1e+308; want at least 0 and at most 1 (0: none)" {
		t.Errorf("Check: %v", err)
	}
}
