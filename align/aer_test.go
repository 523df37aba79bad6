package align

import (
	"math"
	"testing"
)

func maybe(src, tgt int) Link { return Link{Src: src, Tgt: tgt, Possible: true} }

func TestScoresFollowOchNey(t *testing.T) {
	// Each case pools its sentences; the expected values are worked out by hand in the comment.
	tests := []struct {
		name                   string
		predicted, gold        [][]Link
		precision, recall, aer float64
	}{
		{"perfect sure-only alignment",
			[][]Link{{l(0, 0), l(1, 2), l(2, 1)}}, [][]Link{{l(0, 0), l(1, 2), l(2, 1)}},
			1, 1, 0},
		{"disjoint alignment",
			[][]Link{{l(0, 1), l(1, 0)}}, [][]Link{{l(0, 0), l(1, 1)}},
			0, 0, 1},
		// A={00,11,22}, S={00,12}, P=S∪{11}: |A∩S|=1, |A∩P|=2; P=2/3, R=1/2, AER=1-3/5.
		{"possible links count for precision only",
			[][]Link{{l(0, 0), l(1, 1), l(2, 2)}}, [][]Link{{l(0, 0), l(1, 2), maybe(1, 1)}},
			2.0 / 3, 0.5, 0.4},
		// Sentence 1: A=S={00,11}; sentence 2: A={01}, S={00,11}. |A∩S|=|A∩P|=2, |A|=3, |S|=4.
		{"counts pool over sentences",
			[][]Link{{l(0, 0), l(1, 1)}, {l(0, 1)}}, [][]Link{{l(0, 0), l(1, 1)}, {l(0, 0), l(1, 1)}},
			2.0 / 3, 0.5, 1 - 4.0/7},
		// A={00} after dedupe, S={00,11}: P=1, R=1/2, AER=1-2/3.
		{"repeated predicted link counts once",
			[][]Link{{l(0, 0), l(0, 0)}}, [][]Link{{l(0, 0), l(1, 1)}},
			1, 0.5, 1 - 2.0/3},
		// A={00,11}, S={}, P={00,11}: P=1, R=0 (no sure links), AER=1-(0+2)/(2+0)=0.
		{"only possible gold links",
			[][]Link{{l(0, 0), l(1, 1)}}, [][]Link{{maybe(0, 0), maybe(1, 1)}},
			1, 0, 0},
		// 00 given as sure and possible is sure: A={00}, S={00}: everything perfect.
		{"a link both sure and possible is sure",
			[][]Link{{l(0, 0)}}, [][]Link{{maybe(0, 0), l(0, 0)}},
			1, 1, 0},
		{"empty corpus", nil, nil, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Scores
			for i := range tt.predicted {
				s.Add(tt.predicted[i], tt.gold[i])
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"precision", s.Precision(), tt.precision}, {"recall", s.Recall(), tt.recall}, {"AER", s.AER(), tt.aer}} {
				if math.Abs(c.got-c.want) > 1e-12 {
					t.Errorf("%s = %v, want %v (counts %+v)", c.what, c.got, c.want, s)
				}
			}
		})
	}
}
