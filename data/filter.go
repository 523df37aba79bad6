package data

import "fmt"

// FilterReport counts what Filter kept and dropped.
type FilterReport struct {
	Total, Kept, EmptySide, TooLong int
	MaxLen                          int
}

// String reads like "kept 28990 of 29000 pairs (dropped 3 with an empty side, 7 longer than 50 tokens)".
func (r FilterReport) String() string {
	return fmt.Sprintf("kept %d of %d pairs (dropped %d with an empty side, %d longer than %d tokens)",
		r.Kept, r.Total, r.EmptySide, r.TooLong, r.MaxLen)
}

// Filter keeps the pairs whose sides are both non-empty and at most maxLen tokens (maxLen <= 0: no limit).
func Filter(pairs []Pair, maxLen int) ([]Pair, FilterReport) {
	rep := FilterReport{Total: len(pairs), MaxLen: maxLen}
	kept := make([]Pair, 0, len(pairs))
	for _, p := range pairs {
		switch {
		case len(p.Src) == 0 || len(p.Tgt) == 0:
			rep.EmptySide++
		case maxLen > 0 && (len(p.Src) > maxLen || len(p.Tgt) > maxLen):
			rep.TooLong++
		default:
			kept = append(kept, p)
		}
	}
	rep.Kept = len(kept)
	return kept, rep
}
