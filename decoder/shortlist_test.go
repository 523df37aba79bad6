package decoder

import (
	"fmt"
	"github.com/attend-nmt/attend/kernels"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGreedyQueueShortlist decodes sentences in a refilled batch of 3 rows where every sentence may use only its
// own candidates (a random third of a vocabulary of 40, with </s>), by one goroutine and by two, and requires:
//   - every word chosen is the best of the sentence's candidates under the full output layer, recomputed by
//     teacher forcing the sentence's own words (and </s> is the best when the sentence ended with it);
//   - the sentence gets the same words and attention as when decoded alone with its candidates, although the
//     batch scored the union of several sentences' candidates;
//   - with every word a candidate, the words are those of the search over the whole vocabulary.
func TestGreedyQueueShortlist(t *testing.T) {
	const vocab, maxLen = 40, 10
	rng := rand.New(rand.NewPCG(11, 12))
	blocks := randomBlocks(rng, [][]int{{3, 1, 4}, {9, 2, 6, 5}, {5, 3, 5, 8}})
	d := testDecoder(t, vocab, 1)
	var out *OutputRows[float64]
	all := everyWord(vocab)
	cands := map[int][]int{}
	for _, b := range blocks {
		for _, id := range b.IDs {
			cands[id] = randomCandidates(rng, vocab)
		}
	}
	decode := func(blocks []*encBlock[float64], threads int) map[int]Hypothesis {
		got := map[int]Hypothesis{}
		d.queue(3, threads, kernels.Products{}, queueOf(blocks), queueBOS, queueEOS, maxLen, func(id int, h Hypothesis) { got[id] = h })
		return got
	}
	withCandidates := func(b *encBlock[float64], pick func(id int) []int) *encBlock[float64] {
		c := *b
		c.Shortlist = &Shortlist[float64]{Output: out}
		for _, id := range b.IDs {
			c.Shortlist.Candidates = append(c.Shortlist.Candidates, pick(id))
		}
		return &c
	}
	// The first seed whose sentences come out with at least three different lengths, so that rows are refilled
	// at different steps.
	for seed := uint64(1); ; seed++ {
		d.Init(rand.New(rand.NewPCG(seed, 1)))
		out = d.NewOutputRows()
		var short []*encBlock[float64]
		for _, b := range blocks {
			short = append(short, withCandidates(b, func(id int) []int { return cands[id] }))
		}
		lengths := map[int]bool{}
		for _, h := range decode(short, 1) {
			lengths[len(h.Tokens)] = true
		}
		if len(lengths) >= 3 {
			break
		}
		if seed == 100 {
			t.Fatal("no seed up to 100 gives outputs of three different lengths")
		}
	}
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			var short, full []*encBlock[float64]
			for _, b := range blocks {
				short = append(short, withCandidates(b, func(id int) []int { return cands[id] }))
				full = append(full, withCandidates(b, func(int) []int { return all }))
			}
			got, gotAll, want := decode(short, threads), decode(full, threads), decode(blocks, threads)
			lengths := map[int]bool{}
			for _, b := range blocks {
				for r, id := range b.IDs {
					h := got[id]
					lengths[len(h.Tokens)] = true
					enc, ls := alone(b, r)
					// Teacher-force the sentence's words and check each against its candidates' logits.
					steps := len(h.Attention)
					in := append([]int{queueBOS}, h.Tokens...)[:steps]
					logits := d.TeacherForced(enc, ls, in, nil, steps, false).Logits
					for s := range steps {
						next := queueEOS
						if s < len(h.Tokens) {
							next = h.Tokens[s]
						}
						row := logits[s*vocab : (s+1)*vocab]
						best := cands[id][0]
						for _, w := range cands[id] {
							if row[w] > row[best] {
								best = w
							}
						}
						if next != best {
							t.Fatalf("sentence %d step %d: chose %d, the best candidate is %d (candidates %v)", id, s, next, best, cands[id])
						}
					}
					aloneBlock := &encBlock[float64]{Enc: enc, Lengths: ls, IDs: []int{id},
						Shortlist: &Shortlist[float64]{Output: out, Candidates: [][]int{cands[id]}}}
					if a := decode([]*encBlock[float64]{aloneBlock}, 1)[id]; fmt.Sprint(a) != fmt.Sprint(h) {
						t.Fatalf("sentence %d: in the batch %v, alone %v", id, h, a)
					}
					if fmt.Sprint(gotAll[id]) != fmt.Sprint(want[id]) {
						t.Fatalf("sentence %d: every word a candidate %v, whole vocabulary %v", id, gotAll[id], want[id])
					}
				}
			}
			if len(lengths) < 3 {
				t.Fatalf("outputs have %d distinct lengths; want at least 3 so that rows were refilled at different steps", len(lengths))
			}
		})
	}
}

// TestShortlistSlots adds and removes candidate lists and checks that the gathered weights always hold, at each
// word's slot, that word's output weights and bias.
func TestShortlistSlots(t *testing.T) {
	const vocab, oi = 9, 3
	o := &OutputRows[float64]{w: make([]float64, vocab*oi), b: make([]float64, vocab)}
	for i := range o.w {
		o.w[i] = float64(i)
	}
	for j := range o.b {
		o.b[j] = float64(-j)
	}
	s := newShortlist(o, vocab, oi)
	check := func(want []int) {
		t.Helper()
		got := slices.Sorted(slices.Values(s.ids))
		if !slices.Equal(got, want) {
			t.Fatalf("words %v, want %v", got, want)
		}
		for p, id := range s.ids {
			if s.pos[id] != int32(p) || s.b[p] != o.b[id] || !slices.Equal(s.w[p*oi:(p+1)*oi], o.w[id*oi:(id+1)*oi]) {
				t.Fatalf("slot %d holds word %d wrongly: pos %d bias %v weights %v", p, id, s.pos[id], s.b[p], s.w[p*oi:(p+1)*oi])
			}
		}
		for id, p := range s.pos {
			if p >= 0 != slices.Contains(want, id) {
				t.Fatalf("word %d has slot %d; words %v", id, p, want)
			}
		}
	}
	s.add([]int{1, 4, 7})
	s.add([]int{0, 4, 8})
	check([]int{0, 1, 4, 7, 8})
	s.remove([]int{1, 4, 7})
	check([]int{0, 4, 8})
	s.add([]int{2, 3})
	s.remove([]int{0, 4, 8})
	check([]int{2, 3})
	s.remove([]int{2, 3})
	check(nil)
}

// TestBeamShortlist checks beam search under a shortlist: every hypothesis uses only its sentence's candidates;
// a sentence gets the same hypotheses and scores alone as in its batch; a beam of 1 is greedy search under the
// same shortlist; and with every word a candidate it is beam search over the whole vocabulary.
func TestBeamShortlist(t *testing.T) {
	const vocab = 30
	rng := rand.New(rand.NewPCG(13, 14))
	b := randomBlocks(rng, [][]int{{2, 7, 1, 4, 5}})[0]
	d := testDecoder(t, vocab, 5)
	out := d.NewOutputRows()
	short := &Shortlist[float64]{Output: out}
	all := &Shortlist[float64]{Output: out}
	for range b.IDs {
		short.Candidates = append(short.Candidates, randomCandidates(rng, vocab))
		all.Candidates = append(all.Candidates, everyWord(vocab))
	}
	opts := BeamOptions{Width: 3, NBest: 3, MaxLen: 8}
	got, err := d.BeamShortlist(b.Enc, b.Lengths, queueBOS, queueEOS, opts, short)
	if err != nil {
		t.Fatal(err)
	}
	// Some sentence must end before the others, so that later steps index the candidates of the sentences left
	// in a batch that has shrunk.
	early := false
	for _, hyps := range got {
		early = early || len(hyps) > 0 && hyps[0].Finished && len(hyps[0].Tokens) < opts.MaxLen-1
	}
	if !early {
		t.Fatal("no sentence finished early: the test does not exercise a shrinking batch")
	}
	for r := range b.IDs {
		for _, h := range got[r] {
			for _, w := range h.Tokens {
				if !slices.Contains(short.Candidates[r], w) {
					t.Fatalf("sentence %d: word %d is not among its candidates %v", r, w, short.Candidates[r])
				}
			}
		}
		enc, ls := alone(b, r)
		own := &Shortlist[float64]{Output: out, Candidates: short.Candidates[r : r+1]}
		alone, err := d.BeamShortlist(enc, ls, queueBOS, queueEOS, opts, own)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(alone[0]) != fmt.Sprint(got[r]) {
			t.Fatalf("sentence %d: in the batch %v, alone %v", r, got[r], alone[0])
		}
	}
	one, err := d.BeamShortlist(b.Enc, b.Lengths, queueBOS, queueEOS, BeamOptions{Width: 1, MaxLen: 8}, short)
	if err != nil {
		t.Fatal(err)
	}
	greedy := map[int]Hypothesis{}
	block := &encBlock[float64]{Enc: b.Enc, Lengths: b.Lengths, IDs: b.IDs, Shortlist: short}
	d.queue(len(b.IDs), 1, kernels.Products{}, queueOf([]*encBlock[float64]{block}), queueBOS, queueEOS, 8, func(id int, h Hypothesis) { greedy[id] = h })
	for r, id := range b.IDs {
		if fmt.Sprint(one[r][0].Tokens) != fmt.Sprint(greedy[id].Tokens) {
			t.Fatalf("sentence %d: beam 1 %v, greedy %v under the same shortlist", r, one[r][0].Tokens, greedy[id].Tokens)
		}
	}
	every, err := d.BeamShortlist(b.Enc, b.Lengths, queueBOS, queueEOS, opts, all)
	if err != nil {
		t.Fatal(err)
	}
	full, err := d.Beam(b.Enc, b.Lengths, queueBOS, queueEOS, opts)
	if err != nil {
		t.Fatal(err)
	}
	// The same hypotheses; the scores up to the summation order of the two output products.
	for r := range full {
		if len(every[r]) != len(full[r]) {
			t.Fatalf("sentence %d: %d hypotheses with every word a candidate, %d over the whole vocabulary", r, len(every[r]), len(full[r]))
		}
		for i, h := range full[r] {
			e := every[r][i]
			if fmt.Sprint(e.Tokens, e.Attention) != fmt.Sprint(h.Tokens, h.Attention) || math.Abs(e.Score-h.Score) > 1e-9 {
				t.Fatalf("sentence %d hypothesis %d: every word a candidate %v (score %v), whole vocabulary %v (score %v)",
					r, i, e.Tokens, e.Score, h.Tokens, h.Score)
			}
		}
	}
}

// randomCandidates returns </s> and about a third of the other words of a vocabulary of vocab words, sorted.
func randomCandidates(rng *rand.Rand, vocab int) []int {
	c := []int{queueEOS}
	for w := range vocab {
		if w != queueEOS && rng.IntN(3) == 0 {
			c = append(c, w)
		}
	}
	slices.Sort(c)
	return c
}

// everyWord lists the ids of a vocabulary of vocab words.
func everyWord(vocab int) []int {
	all := make([]int, vocab)
	for i := range all {
		all[i] = i
	}
	return all
}
