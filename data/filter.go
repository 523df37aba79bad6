package data

import (
	"fmt"

	"github.com/attend-nmt/attend/internal/plural"
)

// FilterReport counts what Filter kept and dropped.
type FilterReport struct {
	Total, Kept, EmptySide, TooLong int
	MaxLen                          int // the length limit Filter applied; <= 0: none
}

// String reads like "kept 28990 of 29000 pairs (dropped 3 with an empty side, 7 longer than 50 tokens)".
func (r FilterReport) String() string {
	if r.MaxLen <= 0 {
		return fmt.Sprintf("kept %d of %s (dropped %d with an empty side, no length limit)",
			r.Kept, plural.Count(r.Total, "pair"), r.EmptySide)
	}
	return fmt.Sprintf("kept %d of %s (dropped %d with an empty side, %d longer than %s)",
		r.Kept, plural.Count(r.Total, "pair"), r.EmptySide, r.TooLong, plural.Count(r.MaxLen, "token"))
}

// Filter keeps the pairs whose sides are both non-empty and at most maxLen tokens (maxLen <= 0: no length
// limit), in their order. A pair with an empty side is counted as EmptySide even if its other side is too long.
func Filter(pairs []Pair, maxLen int) ([]Pair, FilterReport) {
	report := FilterReport{Total: len(pairs), MaxLen: maxLen}
	kept := make([]Pair, 0, len(pairs))
	for _, p := range pairs {
		switch {
		case len(p.Src) == 0 || len(p.Tgt) == 0:
			report.EmptySide++
		case maxLen > 0 && (len(p.Src) > maxLen || len(p.Tgt) > maxLen):
			report.TooLong++
		default:
			kept = append(kept, p)
		}
	}
	report.Kept = len(kept)
	return kept, report
}
