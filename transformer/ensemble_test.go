package transformer

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// ensembleBeam is the beam options of the ensemble tests: both penalties, n-best lists.
var ensembleBeam = decoder.BeamOptions{Width: 3, NBest: 3, MaxLen: 6, Alpha: 0.6, Beta: 0.3}

// testEnsembleOfOneIsTheModel checks that an ensemble of one model, which ranks words by their log-probabilities
// (the mean of one member's), finds exactly the hypotheses, scores and attention of the model's own searches,
// which rank by its logits.
func testEnsembleOfOneIsTheModel[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			m, _, mem := searchModel[T](t, c, 31, T(beamEOSBias[c]))
			e, err := NewEnsemble(m)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := e.Greedy([]*Memory[T]{mem}, testBOS, testEOS, 9), m.Greedy(mem, testBOS, testEOS, 9); !reflect.DeepEqual(got, want) {
				t.Errorf("greedy: the ensemble of one found %v, the model %v", got, want)
			}
			got, err := e.Beam([]*Memory[T]{mem}, testBOS, testEOS, ensembleBeam)
			if err != nil {
				t.Fatal(err)
			}
			want, err := m.Beam(mem, testBOS, testEOS, ensembleBeam)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("beam: the ensemble of one found %v, the model %v", got, want)
			}
		})
	}
}

// TestEnsembleOfOneIsTheModel: an ensemble of one model searches exactly as the model, in float64 and float32.
func TestEnsembleOfOneIsTheModel(t *testing.T) {
	t.Run("float64", testEnsembleOfOneIsTheModel[float64])
	t.Run("float32", testEnsembleOfOneIsTheModel[float32])
}

// ensembleOfTwo is an ensemble of stepConfigs' two models (learned and sinusoidal positions, an alignment head
// and a tied output layer), with </s> made likelier by eosBias, and their memories of searchLengths.
func ensembleOfTwo[T kernels.Float](t *testing.T, seed uint64, eosBias []float64) (*Ensemble[T], []*Model[T], []reference, []*Memory[T]) {
	t.Helper()
	var models []*Model[T]
	var refs []reference
	var mems []*Memory[T]
	for c := range stepConfigs {
		m, ref, mem := searchModel[T](t, c, seed+uint64(c), T(eosBias[c]))
		models, refs, mems = append(models, m), append(refs, ref), append(mems, mem)
	}
	e, err := NewEnsemble(models...)
	if err != nil {
		t.Fatal(err)
	}
	return e, models, refs, mems
}

// forcedMeanLogProbs recomputes by teacher forcing (Model.Force) the mean over the models of the log-probabilities
// of every word after each prefix of words (bos first) reading sentence s of their memories: a row of V values per
// position.
func forcedMeanLogProbs[T kernels.Float](models []*Model[T], mems []*Memory[T], s int, words []int) [][]float64 {
	mean := make([][]float64, len(words))
	for i, m := range models {
		mem, d, v := mems[i], m.Cfg.Dim, m.Cfg.TgtVocab
		one := &Memory[T]{Rows: 1, SrcLen: mem.SrcLen, Lengths: []int{mem.Lengths[s]}, States: mem.States[s*mem.SrcLen*d : (s+1)*mem.SrcLen*d]}
		logits := m.Force(one, words, len(words)).Logits
		for pos := range words {
			row := make([]float64, v)
			for w, x := range logits[pos*v : (pos+1)*v] {
				row[w] = float64(x)
			}
			lse := kernels.LogSumExp(row, make([]float64, v))
			if mean[pos] == nil {
				mean[pos] = make([]float64, v)
			}
			for w, x := range row {
				mean[pos][w] += (x - lse) / float64(len(models))
			}
		}
	}
	return mean
}

// testEnsembleBeamScores checks an ensemble of two models' n-best lists: each hypothesis' LogProb is the mean of
// the two models' log-probabilities of its words (and </s>), recomputed by teacher forcing, its attention the
// first model's (recomputed from scratch by refDecode), and the lists are sorted by Score.
func testEnsembleBeamScores[T kernels.Float](t *testing.T) {
	tol, attnTol := 1e-10, 1e-7 // attention is kept in float32
	if stepTol[T]() > stepTol64 {
		tol, attnTol = 1e-4, 1e-4
	}
	e, models, refs, mems := ensembleOfTwo[T](t, 61, beamEOSBias)
	lists, err := e.Beam(mems, testBOS, testEOS, ensembleBeam)
	if err != nil {
		t.Fatal(err)
	}
	finished, longer := 0, 0
	for s, list := range lists {
		if len(list) == 0 || len(list) > ensembleBeam.NBest {
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
			words, next := append([]int{testBOS}, h.Tokens...), append(slices.Clone(h.Tokens), testEOS)
			if h.Finished {
				finished++
			} else {
				next, words = next[:len(h.Tokens)], words[:len(h.Tokens)]
			}
			mean := forcedMeanLogProbs(models, mems, s, words)
			logProb := 0.0
			for pos, w := range next {
				logProb += mean[pos][w]
			}
			closeTo(t, name+" log-probability", []float64{h.LogProb}, []float64{logProb}, tol)
			_, weights := refDecode(models[0], refs[0], mems[0], s, words)
			if len(h.Attention) != len(next) {
				t.Fatalf("%s: %d attention rows for %d steps", name, len(h.Attention), len(next))
			}
			for pos, row := range h.Attention {
				got := make([]float64, len(row))
				for j, a := range row {
					got[j] = float64(a)
				}
				closeTo(t, name+" attention", got, weights[pos][:mems[0].Lengths[s]], attnTol)
			}
		}
	}
	if finished == 0 || longer == 0 {
		t.Fatalf("%d hypotheses ended with </s>, %d have 2 words or more: the test needs both", finished, longer)
	}
}

// TestEnsembleBeamScores: an ensemble's beam search scores hypotheses by the mean of its models'
// log-probabilities, in float64 and float32.
func TestEnsembleBeamScores(t *testing.T) {
	t.Run("float64", testEnsembleBeamScores[float64])
	t.Run("float32", testEnsembleBeamScores[float32])
}

// TestEnsembleGreedyTakesTheMeansArgmax checks that an ensemble of two models' greedy search takes, at every step,
// the word of the highest mean log-probability recomputed by teacher forcing, and that this differs from what one
// of the models alone would take in some sentence (else the test could not tell the mean from a member).
func TestEnsembleGreedyTakesTheMeansArgmax(t *testing.T) {
	const maxLen = 9
	e, models, _, mems := ensembleOfTwo[float64](t, 71, greedyEOSBias)
	hyps := e.Greedy(mems, testBOS, testEOS, maxLen)
	differs := [2]bool{}
	for i, m := range models {
		alone := m.Greedy(mems[i], testBOS, testEOS, maxLen)
		for s := range hyps {
			differs[i] = differs[i] || !slices.Equal(alone[s].Tokens, hyps[s].Tokens)
		}
	}
	if !differs[0] || !differs[1] {
		t.Fatalf("the ensemble's greedy translations differ from the models' alone: %v; the test needs both", differs)
	}
	for s, h := range hyps {
		words, next := append([]int{testBOS}, h.Tokens...), append(slices.Clone(h.Tokens), testEOS)
		if !h.Finished {
			if len(h.Tokens) != maxLen {
				t.Fatalf("sentence %d: %d words, unfinished", s, len(h.Tokens))
			}
			next, words = next[:len(h.Tokens)], words[:len(h.Tokens)]
		}
		mean := forcedMeanLogProbs(models, mems, s, words)
		for pos, w := range next {
			best := kernels.Argmax(mean[pos])
			if best != w && mean[pos][best]-mean[pos][w] > 1e-12 {
				t.Errorf("sentence %d, step %d: greedy took %d (mean log-probability %v), the mean's argmax is %d (%v)",
					s, pos, w, mean[pos][w], best, mean[pos][best])
			}
		}
	}
}
