package align

// Scores counts predicted links against gold sure and possible links over a corpus (Och and Ney 2003). Add
// one sentence at a time; the zero value is an empty corpus.
type Scores struct {
	Sentences   int // sentences added
	Predicted   int // |A|: distinct predicted links
	Sure        int // |S|: distinct sure gold links
	HitSure     int // |A ∩ S|
	HitPossible int // |A ∩ P|, where the possible links P include the sure ones
}

// Add counts one sentence: predicted links (their Possible flag is ignored) against gold links, of which those
// marked Possible are possible and the rest sure. A link repeated within one sentence counts once; a link that
// is in the gold both as sure and as possible is sure.
func (s *Scores) Add(predicted, gold []Link) {
	s.Sentences++
	type pair struct{ src, tgt int }
	sure, possible := map[pair]bool{}, map[pair]bool{}
	for _, l := range gold {
		p := pair{l.Src, l.Tgt}
		possible[p] = true
		if !l.Possible {
			sure[p] = true
		}
	}
	seen := map[pair]bool{}
	for _, l := range predicted {
		p := pair{l.Src, l.Tgt}
		if seen[p] {
			continue
		}
		seen[p] = true
		s.Predicted++
		if sure[p] {
			s.HitSure++
		}
		if possible[p] {
			s.HitPossible++
		}
	}
	s.Sure += len(sure)
}

// Precision is |A ∩ P| / |A|, the share of predicted links that are at least possible; 0 with no predictions.
func (s Scores) Precision() float64 {
	if s.Predicted == 0 {
		return 0
	}
	return float64(s.HitPossible) / float64(s.Predicted)
}

// Recall is |A ∩ S| / |S|, the share of sure links that were predicted; 0 with no sure links.
func (s Scores) Recall() float64 {
	if s.Sure == 0 {
		return 0
	}
	return float64(s.HitSure) / float64(s.Sure)
}

// AER is the alignment error rate 1 − (|A ∩ S| + |A ∩ P|) / (|A| + |S|), pooled over the corpus; 0 when there
// are neither predicted nor sure links.
func (s Scores) AER() float64 {
	if s.Predicted+s.Sure == 0 {
		return 0
	}
	return 1 - float64(s.HitSure+s.HitPossible)/float64(s.Predicted+s.Sure)
}
