package transformer

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// Words of the search tests.
const (
	testBOS, testEOS = 1, 2
)

// The </s> biases of the search tests, per stepConfigs entry: with them some sentences end with </s> and some
// at the length limit, and some hypotheses have several words (the tests check that they do).
var (
	greedyEOSBias = []float64{2, 1}
	beamEOSBias   = []float64{1, 0}
)

// searchLengths are the source lengths of the search tests' sentences, padded to 5 positions.
var searchLengths = []int{5, 2, 4, 1, 3}

// searchModel is stepConfigs[c]'s model drawn from seed with </s> made likelier by eosBias, its plain-loop
// reference, and a memory of searchLengths.
func searchModel[T kernels.Float](t *testing.T, c int, seed uint64, eosBias T) (*Model[T], reference, *Memory[T]) {
	t.Helper()
	m, set := newTestModel[T](t, stepConfigs[c], seed)
	m.OutB.Data[testEOS] += eosBias
	return m, newReference(stepConfigs[c], set), newTestMemory[T](slices.Clone(searchLengths), 5, stepConfigs[c].Dim, seed)
}

// testGreedyIsBeamOfWidthOne checks that greedy search gives the words, endings and attention of beam search
// with one beam, on sentences some of which end with </s> before the length limit and some at it.
func testGreedyIsBeamOfWidthOne[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			const maxLen = 9
			m, _, mem := searchModel[T](t, c, 21, T(greedyEOSBias[c]))
			greedy := m.Greedy(mem, testBOS, testEOS, maxLen)
			beam, err := m.Beam(mem, testBOS, testEOS, decoder.BeamOptions{Width: 1, MaxLen: maxLen})
			if err != nil {
				t.Fatal(err)
			}
			ended, stopped := 0, 0
			for s, h := range greedy {
				if len(beam[s]) != 1 || !reflect.DeepEqual(h, beam[s][0].Hypothesis) {
					t.Fatalf("sentence %d: greedy %v (finished %v), beam %v", s, h.Tokens, h.Finished, beam[s])
				}
				if h.Finished {
					ended++
				} else {
					stopped++
				}
				if want := len(h.Tokens) + boolInt(h.Finished); len(h.Attention) != want {
					t.Errorf("sentence %d: %d attention rows for %d words, finished %v", s, len(h.Attention), len(h.Tokens), h.Finished)
				}
				for _, row := range h.Attention {
					if len(row) != mem.Lengths[s] {
						t.Fatalf("sentence %d: an attention row of %d weights, source length %d", s, len(row), mem.Lengths[s])
					}
				}
				if !h.Finished && len(h.Tokens) != maxLen || h.Finished && len(h.Tokens) >= maxLen {
					t.Errorf("sentence %d: %d words, finished %v, limit %d", s, len(h.Tokens), h.Finished, maxLen)
				}
			}
			if ended == 0 || stopped == 0 {
				t.Fatalf("%d sentences ended with </s> and %d at the limit: the test needs both", ended, stopped)
			}
		})
	}
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestGreedyIsBeamOfWidthOne: greedy search and a beam of one agree exactly, in float64 and float32.
func TestGreedyIsBeamOfWidthOne(t *testing.T) {
	t.Run("float64", testGreedyIsBeamOfWidthOne[float64])
	t.Run("float32", testGreedyIsBeamOfWidthOne[float32])
}

// testBeamScores checks each sentence's n-best list of a beam of 3 with both penalties: at most 3 hypotheses
// sorted by Score, each hypothesis's LogProb the sum of its words' (and </s>'s) log-probabilities, and its
// attention the weights, recomputed from scratch by refDecode; its Score LogProb over the length penalty plus the
// coverage penalty.
func testBeamScores[T kernels.Float](t *testing.T) {
	tol, attnTol := 1e-10, 1e-7 // attention is kept in float32
	if stepTol[T]() > stepTol64 {
		tol, attnTol = 1e-4, 1e-4
	}
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, ref, mem := searchModel[T](t, c, 31, T(beamEOSBias[c]))
			opts := decoder.BeamOptions{Width: 3, NBest: 3, MaxLen: 6, Alpha: 0.6, Beta: 0.3}
			lists, err := m.Beam(mem, testBOS, testEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			finished, longer := 0, 0 // hypotheses that end with </s>; of 2 words or more
			for s, list := range lists {
				if len(list) == 0 || len(list) > opts.NBest {
					t.Fatalf("sentence %d: %d hypotheses", s, len(list))
				}
				for i, h := range list {
					name := fmt.Sprintf("sentence %d, hypothesis %d %v (finished %v)", s, i, h.Tokens, h.Finished)
					if i > 0 && h.Score > list[i-1].Score {
						t.Errorf("%s: score %v after %v", name, h.Score, list[i-1].Score)
					}
					if len(h.Tokens) >= 2 {
						longer++
					}
					words := append([]int{testBOS}, h.Tokens...)
					next := append(slices.Clone(h.Tokens), testEOS)
					if h.Finished {
						finished++
						words = append(words, testEOS) // the last step is </s>'s; its input is not read
					} else {
						next = next[:len(h.Tokens)]
					}
					logits, weights := refDecode(m, ref, mem, s, words[:len(next)])
					logProb := 0.0
					for pos, w := range next {
						logProb += logits[pos][w] - kernels.LogSumExp(logits[pos], make([]float64, len(logits[pos])))
						got := make([]float64, len(h.Attention[pos]))
						for j, a := range h.Attention[pos] {
							got[j] = float64(a)
						}
						if len(got) != mem.Lengths[s] {
							t.Fatalf("%s: an attention row of %d weights, source length %d", name, len(got), mem.Lengths[s])
						}
						closeTo(t, name+" attention", got, weights[pos][:len(got)], attnTol)
					}
					if len(h.Attention) != len(next) {
						t.Errorf("%s: %d attention rows for %d steps", name, len(h.Attention), len(next))
					}
					closeTo(t, name+" log-probability", []float64{h.LogProb}, []float64{logProb}, tol)
					score := h.LogProb/decoder.LengthPenalty(len(next), opts.Alpha) + decoder.CoveragePenalty(h.Attention, opts.Beta)
					if h.Score != score {
						t.Errorf("%s: score %v, want %v", name, h.Score, score)
					}
				}
			}
			if finished == 0 || longer == 0 {
				t.Fatalf("%d hypotheses ended with </s>, %d have 2 words or more: the test needs both", finished, longer)
			}
		})
	}
}

// closeTo fails the test when got and want differ by more than tol, relative to max(1, |want|).
func closeTo(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	for i := range want {
		if !(math.Abs(got[i]-want[i]) <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Errorf("%s: value %d is %v, want %v", name, i, got[i], want[i])
			return
		}
	}
}

// TestBeamScores: beam search's n-best lists are sorted and scored as their words' log-probabilities recomputed
// from scratch say, in float64 and float32.
func TestBeamScores(t *testing.T) {
	t.Run("float64", testBeamScores[float64])
	t.Run("float32", testBeamScores[float32])
}

// testFavouredWord makes one word far likelier than any other through the output bias: greedy search and beam
// search must repeat it up to the length limit, unfinished; with </s> favoured, they must stop at once with no
// words, one attention row and a log-probability of about 0.
func testFavouredWord[T kernels.Float](t *testing.T) {
	const maxLen, word = 4, 7
	opts := decoder.BeamOptions{Width: 2, NBest: 2, MaxLen: maxLen}
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, _, mem := searchModel[T](t, c, 41, 0)
			m.OutB.Data[word] += 60
			lists, err := m.Beam(mem, testBOS, testEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			for s, h := range m.Greedy(mem, testBOS, testEOS, maxLen) {
				want := []int{word, word, word, word}
				if !reflect.DeepEqual(h.Tokens, want) || h.Finished || len(h.Attention) != maxLen {
					t.Errorf("greedy, sentence %d: %v, finished %v, %d attention rows; want %v unfinished", s, h.Tokens, h.Finished, len(h.Attention), want)
				}
				if best := lists[s][0]; !reflect.DeepEqual(best.Tokens, want) || best.Finished {
					t.Errorf("beam, sentence %d: %v, finished %v; want %v unfinished", s, best.Tokens, best.Finished, want)
				}
			}
			m.OutB.Data[testEOS] += 120
			lists, err = m.Beam(mem, testBOS, testEOS, opts)
			if err != nil {
				t.Fatal(err)
			}
			for s, h := range m.Greedy(mem, testBOS, testEOS, maxLen) {
				if h.Tokens != nil || !h.Finished || len(h.Attention) != 1 || len(h.Attention[0]) != mem.Lengths[s] {
					t.Errorf("greedy, sentence %d: %v, finished %v, %d attention rows; want none, finished, 1 row", s, h.Tokens, h.Finished, len(h.Attention))
				}
				if best := lists[s][0]; best.Tokens != nil || !best.Finished || best.LogProb < -1e-6 {
					t.Errorf("beam, sentence %d: %v, finished %v, log-probability %v; want none, finished, 0", s, best.Tokens, best.Finished, best.LogProb)
				}
			}
		})
	}
}

// TestFavouredWord: a word the output bias makes near-certain is what both searches emit, in float64 and
// float32.
func TestFavouredWord(t *testing.T) {
	t.Run("float64", testFavouredWord[float64])
	t.Run("float32", testFavouredWord[float32])
}

// TestSearchEdges: greedy search to no words gives empty hypotheses, and beam search reports bad options.
func TestSearchEdges(t *testing.T) {
	m, _, mem := searchModel[float64](t, 0, 51, 0)
	for s, h := range m.Greedy(mem, testBOS, testEOS, 0) {
		if h.Tokens != nil || h.Attention != nil || h.Finished {
			t.Errorf("sentence %d: %+v from a search of at most 0 words", s, h)
		}
	}
	if _, err := m.Beam(mem, testBOS, testEOS, decoder.BeamOptions{Width: 0, MaxLen: 3}); err == nil {
		t.Error("a beam of width 0 accepted")
	}
}
