package bound

import (
	"math"
	"strings"
	"testing"
)

// TestRangesRefuseNonFiniteNumbers: no range, not even one without an upper bound, holds NaN or ±Inf, and Parse
// refuses them, text that is not a number, and numbers past float64 (1e400) with the range in the message.
func TestRangesRefuseNonFiniteNumbers(t *testing.T) {
	for _, r := range []Range{AtLeast(0, ""), Between(-1, 1, ""), Fraction(""), {Min: math.Inf(-1), Max: math.Inf(1)}} {
		for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			if r.Contains(x) || r.Check("k", x) == nil {
				t.Errorf("%v holds %v", r, x)
			}
		}
		for _, s := range []string{"NaN", "+Inf", "-Inf", "inf", "1e400", "-1e400", "x", ""} {
			if _, err := r.Parse(s); err == nil || !strings.Contains(err.Error(), "want ") {
				t.Errorf("%v: Parse(%q) = %v, want a refusal saying the range", r, s, err)
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
	if _, err := Between(1, 10, "").ParseInt("99999999999999999999"); err == nil || !strings.Contains(err.Error(), "between 1 and 10") {
		t.Errorf("ParseInt of an overflowing integer: %v", err)
	}
	if n, err := Between(1, 10, "").ParseInt("7"); n != 7 || err != nil {
		t.Errorf("ParseInt(7) = %d, %v", n, err)
	}
}
