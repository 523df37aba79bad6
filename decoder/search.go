package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// Session is one model's decoding of a batch of sentences, started from its encoder's states of them with one
// row per sentence: the one interface that greedy search (Greedy), beam search (Beam) and ensembles, which step
// one Session per member side by side, are written on. The recurrent decoder (Decoder.Session) and the
// Transformer implement it.
type Session[T kernels.Float] interface {
	// Step decodes one position of every row, prev[r] being row r's previous word (bos at the first step): it
	// writes the logits (len(prev) rows of the target vocabulary) and the attention weights over the source that
	// the hypotheses keep (len(prev) rows of the batch's padded source length; 0 past a row's source length).
	Step(prev []int, logits, weights []T)
	// Reorder makes new row r continue old row from[r]: the rows are then len(from), which may be more than
	// before (beam search's first step spreads each sentence to its beams) or fewer (ended rows leave).
	Reorder(from []int)
}

// Joiner is a Session that sentences can join while it decodes others: a running batch, kept full by refilling
// the rows of ended sentences (Reorder drops them) with new ones.
type Joiner[T kernels.Float] interface {
	Session[T]
	// Join appends, after the session's current rows, row r of src for each r of rows (in order; a row may be
	// joined more than once, as beam search spreads a sentence to its beams). src is a Session of the same model,
	// started on other sentences and not yet stepped, whose rows then take their first step in this session.
	// The session's padded source length grows to the longest joined source when it is longer. Join does not
	// keep rows.
	Join(src Session[T], rows []int)
	// SrcLen is the session's padded source length: the length of each row of Step's weights. It may shrink
	// when rows leave (Reorder, or the recurrent decoder's fit) and grow when rows join.
	SrcLen() int
}

// advancer is a Session whose output layer a search may compute itself, with a shortlist or bfloat16 products,
// and whose rows several goroutines may advance at once: the recurrent decoder's (found by type assertion; a
// Session without it scores with its own Step).
type advancer[T kernels.Float] interface {
	Session[T]
	// split readies the session for parts goroutines to advance it at once; it must be called before advance
	// with more than one part, once the rows are those of the step.
	split(parts int)
	// advance is Step up to the output layer for part p of parts of the rows (rows len(prev)·p/parts up to
	// len(prev)·(p+1)/parts; prev and weights are every row's), which leaves the output layer's input in outIn.
	advance(prev []int, weights []T, p, parts int)
	// outIn is the output layer's input of the first rows rows, OutIn values each, as advance left it.
	outIn(rows int) []T
	// decoder is the Decoder whose output layer that input feeds.
	decoder() *Decoder[T]
}

// fitter is a Joiner whose padding a search may fit to its rows: fit pads them to the longest of their sources,
// unless that saves at most slack positions. The running batch fits it before every step, so that a step costs
// what its sentences need: greedy search exactly, beam search, whose many rows all move when the padding
// changes, when a quarter of it would go, and only once sentences have joined (a batch that takes none keeps the
// padding it started with).
type fitter interface{ fit(slack int) }

// Output is how a search computes its output layer, decided once when it starts: with Products in bfloat16 (not
// Products.Float32), a model alone whose Session lets the search compute its output layer (a recurrent decoder)
// scores the vocabulary on bfloat16 products and rescores the words near the best exactly (see
// bf16Search); with a Shortlist, such a model scores only each sentence's candidate words (and then in float32).
// The zero value is the model's own float32 output layer.
type Output[T kernels.Float] struct {
	Products  kernels.Products
	Shortlist *Shortlist[T]
}

// Greedy decodes the sentences of sessions, one Session per member of an ensemble (one for a model alone), each
// started on that member's encoder states of the same sentences, whose source lengths are lengths, padded to
// srcLen, greedily (GreedyQueue) in one batch, over a target vocabulary of vocab words, from bos until each has
// produced eos or maxLen words. Ended sentences leave the batch, so later steps cost only the sentences still
// being decoded. When stop is closed (nil never is) the search stops before its next step with ErrStopped.
func Greedy[T kernels.Float](sessions []Session[T], lengths []int, srcLen, vocab, bos, eos, maxLen int, stop <-chan struct{}) ([]Hypothesis, error) {
	hyps := make([]Hypothesis, len(lengths))
	err := GreedyQueue(once(sessions, lengths, srcLen, nil), func(id int, h Hypothesis) { hyps[id] = h },
		GreedyOptions{Rows: len(lengths), Threads: 1, Vocab: vocab, BOS: bos, EOS: eos, MaxLen: maxLen, Stop: stop})
	if err != nil {
		return nil, err
	}
	return hyps, nil
}

// Beam decodes the sentences of sessions (as Greedy: one Session per member, one row per sentence, of source
// lengths lengths padded to srcLen, over vocab words) with beam search, and returns, for each sentence, up to
// opts.NBest hypotheses sorted by Score, best first (BeamQueue of one block). Each sentence keeps opts.Width
// live hypotheses, rows j·Width … j·Width+Width-1 of the j-th sentence still searched (the first step decodes one
// row per sentence). At every step each sentence's Width·vocab extensions are ranked by log-probability
// (several members: the mean of theirs, so that a hypothesis' LogProb is the mean of the members'
// log-probabilities of it); those among the best Width that end in eos are set aside as finished, and the best
// Width that do not become the next live hypotheses, each Session following them with Reorder. A sentence is
// done when Width hypotheses have finished, at its length limit, where its live hypotheses are set aside
// unfinished, or once its n-best list can no longer change; done sentences leave the batch. With Width 1 it is
// exactly Greedy. Every hypothesis keeps the first member's attention rows of its own words (and of its </s>),
// cut to its source length.
//
// out says how a model alone computes its output layer (Output): a shortlist makes each sentence use only its
// candidate words, its log-probabilities normalised over them. A shortlist needs one model whose Session lets
// the search compute its output layer: an error otherwise. So do out's options out of range.
func Beam[T kernels.Float](sessions []Session[T], lengths []int, srcLen, vocab, bos, eos int, opts BeamOptions, out Output[T]) ([][]Scored, error) {
	return beam(sessions, len(sessions) > 1, lengths, srcLen, vocab, bos, eos, opts, out)
}

// beam is Beam, ranking by the mean of the members' log-probabilities when mean is set: BeamQueue of the one
// block of sessions.
func beam[T kernels.Float](sessions []Session[T], mean bool, lengths []int, srcLen, v, bos, eos int, opts BeamOptions, out Output[T]) ([][]Scored, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	for _, l := range lengths {
		if l > srcLen {
			return nil, fmt.Errorf("decoder: a source length of %d in a batch padded to %d positions", l, srcLen)
		}
	}
	if _, ok := sessions[0].(advancer[T]); out.Shortlist != nil && (!ok || len(sessions) > 1 || mean) {
		return nil, fmt.Errorf("decoder: a shortlist with %d models, or with a model whose output layer a search cannot compute", len(sessions))
	}
	lists := make([][]Scored, len(lengths))
	err := queue(once(sessions, lengths, srcLen, out.Shortlist), func(id int, list []Scored) { lists[id] = list },
		GreedyOptions{Rows: len(lengths) * opts.Width, Threads: 1, Products: out.Products, Vocab: v, BOS: bos, EOS: eos, Stop: opts.Stop},
		&opts, mean, func(d *Decoder[T]) *bf16Output { return d.bf16For(out.Products) })
	if err != nil {
		return nil, err
	}
	return lists, nil
}

// once is the queue (GreedyQueue's next) of one block: every row of sessions, started on sentences of source
// lengths lengths padded to srcLen, its id its row, with the shortlist sl (nil: none).
func once[T kernels.Float](sessions []Session[T], lengths []int, srcLen int, sl *Shortlist[T]) func() *Block[T] {
	block := &Block[T]{Sessions: sessions, SrcLen: srcLen, Lengths: lengths, IDs: make([]int, len(lengths)), Shortlist: sl}
	for r := range block.IDs {
		block.IDs[r] = r
	}
	return func() *Block[T] {
		b := block
		block = nil
		return b
	}
}
