package data

import (
	"reflect"
	"testing"
)

func TestFilterDropsEmptyAndLongPairsAndCountsThem(t *testing.T) {
	words := func(n int) []string { return make([]string, n) }
	pairs := []Pair{
		{Src: words(1), Tgt: words(1), Line: 1},
		{Src: nil, Tgt: words(1), Line: 2},        // empty source
		{Src: words(3), Tgt: words(2), Line: 3},   // source too long
		{Src: words(1), Tgt: []string{}, Line: 4}, // empty target
		{Src: words(2), Tgt: words(2), Line: 5},   // exactly at the limit
		{Src: words(2), Tgt: words(3), Line: 6},   // target too long
		{Src: nil, Tgt: words(5), Line: 7},        // empty and too long: counted as empty
		{Src: words(1), Tgt: words(2), Line: 8},
	}
	cases := []struct {
		name      string
		maxLen    int
		keptLines []int
		report    FilterReport
		text      string
	}{
		{"limit 2", 2, []int{1, 5, 8},
			FilterReport{Total: 8, Kept: 3, EmptySide: 3, TooLong: 2, MaxLen: 2},
			"kept 3 of 8 pairs (dropped 3 with an empty side, 2 longer than 2 tokens)"},
		{"limit 3", 3, []int{1, 3, 5, 6, 8},
			FilterReport{Total: 8, Kept: 5, EmptySide: 3, TooLong: 0, MaxLen: 3},
			"kept 5 of 8 pairs (dropped 3 with an empty side, 0 longer than 3 tokens)"},
		{"no limit", 0, []int{1, 3, 5, 6, 8},
			FilterReport{Total: 8, Kept: 5, EmptySide: 3, TooLong: 0, MaxLen: 0},
			"kept 5 of 8 pairs (dropped 3 with an empty side, no length limit)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kept, report := Filter(pairs, c.maxLen)
			var lines []int
			for _, p := range kept {
				lines = append(lines, p.Line)
			}
			if !reflect.DeepEqual(lines, c.keptLines) {
				t.Errorf("kept lines %v, want %v", lines, c.keptLines)
			}
			if report != c.report {
				t.Errorf("report %+v, want %+v", report, c.report)
			}
			if report.String() != c.text {
				t.Errorf("String() = %q, want %q", report, c.text)
			}
		})
	}
}
