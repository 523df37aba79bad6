// Package bound states and checks the range of a numeric setting (a config key, a command-line flag, a field of
// a request), so that every one is checked the same way: NaN and ±Inf are in no range, and a range
// says itself in words, for the reference and for the error messages.
package bound

import (
	"fmt"
	"math"
	"strconv"
)

// Range is the set of numbers a setting accepts: Min to Max (math.Inf(1) for no upper bound), without Min itself
// when Above, without Max itself when Below, and 0 besides when Zero. No range holds NaN, +Inf or -Inf.
type Range struct {
	Min, Max     float64
	Above, Below bool
	Zero         bool
	// Note says what special values mean ("0: no length penalty"); error messages add it to the range.
	Note string
}

// AtLeast is [min, +Inf): any finite number from min.
func AtLeast(min float64, note string) Range { return Range{Min: min, Max: math.Inf(1), Note: note} }

// Between is [min, max].
func Between(min, max float64, note string) Range { return Range{Min: min, Max: max, Note: note} }

// Fraction is [0, 1).
func Fraction(note string) Range { return Range{Min: 0, Max: 1, Below: true, Note: note} }

// Contains reports whether x is in the range; NaN and ±Inf never are.
func (r Range) Contains(x float64) bool {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return false
	}
	if r.Zero && x == 0 {
		return true
	}
	return (x > r.Min || x == r.Min && !r.Above) && (x < r.Max || x == r.Max && !r.Below)
}

// String is Text(false).
func (r Range) String() string { return r.Text(false) }

// Text says the range in words, for integers or for numbers: "between 1 and 8", "at least 0", "above 0 and at
// most 10", "a finite number, at least 0", "at least 0 and below 1", "0 or at least 5". The note is not in it.
func (r Range) Text(integer bool) string {
	lo := "at least " + Num(r.Min)
	if r.Above {
		lo = "above " + Num(r.Min)
	}
	var s string
	switch {
	case math.IsInf(r.Max, 1) && integer:
		s = lo
	case math.IsInf(r.Max, 1):
		s = "a finite number, " + lo
	case integer && !r.Above && !r.Below:
		s = "between " + Num(r.Min) + " and " + Num(r.Max)
	case r.Below:
		s = lo + " and below " + Num(r.Max)
	default:
		s = lo + " and at most " + Num(r.Max)
	}
	if r.Zero {
		s = "0 or " + s
	}
	return s
}

// want is Text with the note in parentheses.
func (r Range) want(integer bool) string {
	if r.Note != "" {
		return r.Text(integer) + " (" + r.Note + ")"
	}
	return r.Text(integer)
}

// Check returns nil when x is in the range, or an error "NAME is X; want RANGE (NOTE)".
func (r Range) Check(name string, x float64) error {
	if r.Contains(x) {
		return nil
	}
	return fmt.Errorf("%s is %v; want %s", name, x, r.want(false))
}

// CheckInt is Check for an integer setting, whose range is said as integers'.
func (r Range) CheckInt(name string, n int64) error {
	if float64(n) < math.MaxInt64 && r.Contains(float64(n)) {
		return nil
	}
	return fmt.Errorf("%s is %d; want %s", name, n, r.want(true))
}

// Num writes a number without needless decimals: 1, 65536, 0.5, 1e-08.
func Num(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
