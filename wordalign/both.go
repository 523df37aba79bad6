package wordalign

import (
	"context"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
)

// Links are the Viterbi links of every sentence pair of a corpus in each direction, both in the corpus's
// orientation (source position first). Reverse is nil when only the forward model was trained.
type Links struct {
	Forward, Reverse [][]align.Link
}

// Symmetrized combines the two directions' links of every pair by method (see align.Symmetrize). It panics on
// an unknown method, or one that needs a direction that was not aligned.
func (l *Links) Symmetrized(method align.Symmetrization) [][]align.Link {
	switch {
	case method == align.Forward:
		return l.Forward
	case method == align.Reverse:
		return l.Reverse
	case l.Forward == nil || l.Reverse == nil:
		panic("wordalign: " + string(method) + " needs the links of both directions")
	}
	out := make([][]align.Link, len(l.Forward))
	for k := range l.Forward {
		out[k] = align.Symmetrize(l.Forward[k], l.Reverse[k], method)
	}
	return out
}

// Align trains a model on examples in each direction sym needs (the forward direction alone for align.Forward,
// the reverse alone for align.Reverse, both otherwise) and returns their links; Links.Symmetrized(sym) then
// combines them. opts.Progress, when set, hears the direction of each pass.
func Align(ctx context.Context, examples []data.Example, srcSize, tgtSize int, opts Options, sym align.Symmetrization) (*Links, error) {
	if err := sym.Validate(); err != nil {
		return nil, err
	}
	var out Links
	if sym != align.Reverse {
		links, err := alignOne(ctx, "forward", examples, srcSize, tgtSize, opts)
		if err != nil {
			return nil, err
		}
		out.Forward = links
	}
	if sym != align.Forward {
		reversed := make([]data.Example, len(examples))
		for k, ex := range examples {
			reversed[k] = data.Example{Src: ex.Tgt, Tgt: ex.Src}
		}
		links, err := alignOne(ctx, "reverse", reversed, tgtSize, srcSize, opts)
		if err != nil {
			return nil, err
		}
		out.Reverse = make([][]align.Link, len(links))
		for k, l := range links {
			out.Reverse[k] = align.Sort(align.Transpose(l))
		}
	}
	return &out, nil
}

// alignOne trains one direction and aligns its corpus, naming the direction in the progress reports.
func alignOne(ctx context.Context, direction string, examples []data.Example, srcSize, tgtSize int, opts Options) ([][]align.Link, error) {
	if report := opts.Progress; report != nil {
		opts.Progress = func(p Progress) {
			p.Direction = direction
			report(p)
		}
	}
	m, err := Train(ctx, examples, srcSize, tgtSize, opts)
	if err != nil {
		return nil, err
	}
	return m.Align(ctx, examples)
}

// AlignWords is Align on sentence pairs of words: each side's words are numbered in the order they first
// appear (so "Haus" and "haus" are different words: lowercase beforehand to merge them).
func AlignWords(ctx context.Context, pairs []data.Pair, opts Options, sym align.Symmetrization) (*Links, error) {
	srcIDs, tgtIDs := map[string]int{}, map[string]int{}
	number := func(ids map[string]int, words []string) []int {
		out := make([]int, len(words))
		for k, w := range words {
			id, ok := ids[w]
			if !ok {
				id = len(ids)
				ids[w] = id
			}
			out[k] = id
		}
		return out
	}
	examples := make([]data.Example, len(pairs))
	for k, p := range pairs {
		examples[k] = data.Example{Src: number(srcIDs, p.Src), Tgt: number(tgtIDs, p.Tgt)}
	}
	return Align(ctx, examples, len(srcIDs), len(tgtIDs), opts, sym)
}
