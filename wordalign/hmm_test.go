package wordalign

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
)

// hmmOptions are ModelOptions("hmm") with iters HMM iterations on one worker.
func hmmOptions(t *testing.T, iters int) Options {
	opts, err := ModelOptions("hmm")
	if err != nil {
		t.Fatal(err)
	}
	opts.HMMIterations, opts.Workers = iters, 1
	return opts
}

// paths enumerates every state sequence of ex under m's HMM, as hmm.go defines it, and returns the total
// probability of ex's target words and the most probable sequence's links.
func paths(m *Model, ex data.Example) (total float64, best []align.Link) {
	var h hmmScratch
	m.hmmTables(ex, nil, &h)
	n, w, p0 := len(ex.Src), len(ex.Src)+1, m.opts.HMMNullProb
	top := -1.0
	var walk func(i, p int, prob float64, links []align.Link)
	walk = func(i, p int, prob float64, links []align.Link) {
		if i == len(ex.Tgt) {
			total += prob
			if prob > top {
				top, best = prob, slices.Clone(links)
			}
			return
		}
		walk(i+1, p, prob*p0*h.emit[i*w], links) // the empty state of p
		for j := 1; j <= n; j++ {
			walk(i+1, j, prob*(1-p0)*h.trans[p*n+j-1]*h.emit[i*w+j], append(links, align.Link{Src: j - 1, Tgt: i}))
		}
	}
	walk(0, 0, 1, nil)
	return total, align.Sort(best)
}

// Forward-backward and Viterbi agree with summing and maximising over every state sequence of small pairs, and
// each target word's posteriors (source positions and empty states) sum to 1.
func TestHMMMatchesEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ex := randomCorpus(rng, 200, 8)
	m, err := Train(context.Background(), ex, 8, 8, hmmOptions(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	var s scratch
	for k, e := range ex[:40] {
		if len(e.Tgt) > 5 || len(e.Src) > 5 {
			continue
		}
		total, best := paths(m, e)
		h := &s.hmm
		m.hmmTables(e, nil, h)
		if got := m.forwardBackward(e, h); math.Abs(got-math.Log(total)) > 1e-9 {
			t.Errorf("pair %d: forward log-probability %.12f, enumeration %.12f", k, got, math.Log(total))
		}
		w := len(e.Src) + 1
		for i := range e.Tgt {
			sum := 0.0
			for p := range w {
				sum += (h.fwd[i*w+p] + h.empty[i*w+p]) * h.bwd[i*w+p]
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("pair %d, target word %d: posteriors sum to %.12f", k, i, sum)
			}
		}
		if got := m.hmmViterbi(e, &s); !slices.Equal(got, best) {
			t.Errorf("pair %d %v: Viterbi links %v, enumeration's best %v", k, e, got, best)
		}
	}
}

// EM does not lower the likelihood: each HMM iteration's mean log-likelihood (of the parameters it started
// from) is at least the one before, with plain maximum likelihood on the lexical table.
func TestHMMLikelihoodRises(t *testing.T) {
	opts := hmmOptions(t, 6)
	opts.Alpha = 0
	m, err := Train(context.Background(), randomCorpus(rand.New(rand.NewPCG(7, 8)), 500, 12), 12, 12, opts)
	if err != nil {
		t.Fatal(err)
	}
	hmm := m.Stats[opts.Iterations:]
	for k := 1; k < len(hmm); k++ {
		if hmm[k].LogLikelihood < hmm[k-1].LogLikelihood-1e-9 {
			t.Errorf("HMM iteration %d: log-likelihood %.6f, below iteration %d's %.6f", k+1, hmm[k].LogLikelihood, k, hmm[k-1].LogLikelihood)
		}
	}
}

// Repeated words are where the positions matter: in "a a a b" → "x x x y" every x is equally likely to
// translate any a by the lexical table alone, and the HMM's jumps of +1 put every link on the diagonal.
func TestHMMAlignsMonotoneRepeats(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var ex []data.Example
	for range 300 {
		var e data.Example
		for range 2 + rng.IntN(8) {
			w := rng.IntN(6)
			for range 1 + rng.IntN(3) {
				e.Src, e.Tgt = append(e.Src, w), append(e.Tgt, w)
			}
		}
		ex = append(ex, e)
	}
	links, err := Align(context.Background(), ex, 6, 6, hmmOptions(t, 5), align.Forward)
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range links.Forward {
		for _, link := range l {
			if link.Src != link.Tgt {
				t.Fatalf("pair %d %v: links %v, want the diagonal", k, ex[k].Src, l)
			}
		}
		if len(l) < len(ex[k].Tgt)*9/10 {
			t.Errorf("pair %d: %d links for %d words", k, len(l), len(ex[k].Tgt))
		}
	}
}
