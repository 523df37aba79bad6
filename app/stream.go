package app

import (
	"fmt"
	"runtime"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/model"
)

// SourceLength is the number of tokens the model's encoder reads for a tokenized sentence: its words, or, for a
// model trained on subwords, their subwords.
func SourceLength(m *model.Seq2Seq[float32], tokens []string) int {
	if m.Subwords == nil {
		return len(tokens)
	}
	pieces, _ := m.Subwords.Split(tokens)
	return len(pieces)
}

// StreamSentence is a tokenized sentence for TranslateStream and what receives its translation. Search, when
// set, is the sentence's own search settings in place of the stream's: they must have the stream's StreamShape.
type StreamSentence struct {
	Tokens []string
	Done   func(Translation)
	Search *DecodeOptions
}

// StreamShape is what the settings of the sentences of one TranslateStream must share: o without the settings a
// sentence of a running batch may have of its own (StreamSentence.Search), which change only how its words are
// chosen, ranked, cut and written, not the batch's rows: ReplaceUnk, and for beam search Alpha, Beta, NBest,
// MaxLen and MaxLenRatio. A beam width is the rows of every sentence of a batch, and greedy and beam search
// choose their words differently, each on its own output layer: those never share a stream.
func StreamShape(o DecodeOptions) DecodeOptions {
	o.ReplaceUnk, o.products = false, nil // (products are Precision's, chosen)
	if !o.greedy() {
		o.Alpha, o.Beta, o.NBest, o.MaxLen, o.MaxLenRatio = 0, 0, 1, 0, 0 // (NBest 1: never greedy's shape)
	}
	return o
}

// TranslateStream translates sentences as they arrive, with the search TranslateTokens uses (model.Ensemble.Translate),
// in a running batch for recurrent models stepped by cores goroutines (0: one per core, GOMAXPROCS): opts.Batch
// sentences per core (opts.Beam rows each), each ended sentence's rows refilled at once (beam search too:
// model.Search.Running). next is called on TranslateStream's goroutine whenever the search has room and the
// sentences next gave before have all been placed, with room, the number of sentences the batch can take now: it
// returns the sentences waiting (they are cut into blocks of opts.Batch, each ordered by length and encoded when
// it enters; more than room wait for rows to free), an empty non-nil slice when none is waiting (next is asked
// again at the next step), or nil to take no more. Each translation goes to its sentence's Done, on
// TranslateStream's goroutine, as soon as the sentence ends; a sentence without tokens gets its empty translation
// at once. The translations are those TranslateTokens gives (words, for a model trained on subwords), without
// Heads, which a stream does not compute. TranslateStream returns when the batch is empty and next has no
// sentence.
func TranslateStream(m *model.Seq2Seq[float32], opts DecodeOptions, cores int, next func(room int) []StreamSentence) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts, models, rowsPerCore, err := prepareSearch(m, opts) // (as TranslateTokens prepares its search)
	if err != nil {
		return err
	}
	var rows *decoder.OutputRows[float32]
	if opts.Shortlist != nil {
		rows = m.OutputRows()
	}
	// entering holds what the search has not taken yet of next's answers: their batches, encoded one at a time.
	type block struct {
		batch    data.Batch
		examples []data.Example // of the answer the block is cut from, which batch.Index points into
		ids      []int          // the stream's id of each real row
		beam     *decoder.BeamOptions
	}
	var entering []block
	inBatch := map[int]streamSentence{}
	id := 0
	if procs := runtime.GOMAXPROCS(0); cores <= 0 || cores > procs {
		cores = procs
	}
	search := opts.modelSearch(nil, cores) // (a search runs on at most as many cores as it has jobs)
	search.Running = true
	// A stream keeps opts.Batch sentences per core, as translate's job per core does (Beam rows each). A server
	// runs a stream per core (a worker each), which shares the sentences out evenly; when one stream stepped by
	// every core held ⌈Batch/Beam⌉ beam sentences per core, so that its steps stayed short, a core stood idle while
	// the other did a step's work of one goroutine (encoding, reordering): `BEAM=5 scripts/serve-load.sh` reached
	// 58% of translate --input, now 80–85%, with half-load p99 under 60 ms.
	search.Rows = rowsPerCore
	capacity := search.Rows * cores
	take := func() *model.Job {
		for len(entering) == 0 {
			waiting := next(max(0, capacity-len(inBatch)))
			if waiting == nil {
				return nil
			}
			if len(waiting) == 0 {
				return &model.Job{}
			}
			// The sentences are cut into blocks of one beam search's settings each (decoder.Block's Beam).
			type group struct {
				examples []data.Example
				ids      []int
			}
			var order []decoder.BeamOptions
			groups := map[decoder.BeamOptions]*group{}
			for _, s := range waiting {
				o := opts
				if s.Search != nil {
					o = *s.Search
					o.Beam, o.NBest = min(o.Beam, opts.Beam), min(o.NBest, opts.Beam)
					if StreamShape(o) != StreamShape(opts) {
						panic(fmt.Sprintf("app: a stream sentence's search %+v in a stream of %+v", o, opts))
					}
				}
				sent := newStreamSentence(m, s, o.ReplaceUnk)
				if len(sent.pieces) == 0 {
					s.Done(sent.translation(m, nil))
					continue
				}
				var key decoder.BeamOptions
				if !opts.greedy() {
					key = o.beamOptions()
				}
				g := groups[key]
				if g == nil {
					g = &group{}
					groups[key] = g
					order = append(order, key)
				}
				inBatch[id] = sent
				g.examples = append(g.examples, data.Example{Src: m.SrcVocab.Encode(sent.pieces)})
				g.ids = append(g.ids, id)
				id++
			}
			for _, key := range order {
				g := groups[key]
				var beam *decoder.BeamOptions
				if !opts.greedy() {
					beam = &key
				}
				for _, b := range data.MakeBatches(g.examples, data.BatchOptions{BatchSize: opts.Batch}, nil) {
					blk := block{batch: b, examples: g.examples, ids: make([]int, b.Real), beam: beam}
					for r := range blk.ids {
						blk.ids[r] = g.ids[b.Index[r]]
					}
					entering = append(entering, blk)
				}
			}
		}
		e := entering[0]
		entering = entering[1:]
		j := &model.Job{Batch: &e.batch, IDs: e.ids, Beam: e.beam}
		if rows != nil {
			j.Shortlist = shortlistOf(m, rows, e.examples, *opts.Shortlist, &e.batch)
		}
		return j
	}
	return models.Translate(search, take, func(i int, list []decoder.Scored) {
		s := inBatch[i]
		delete(inBatch, i)
		s.done(s.translation(m, list))
	})
}

// streamSentence is a sentence of TranslateStream: its words, the model's tokens for them, and where its
// translation goes.
type streamSentence struct {
	words, pieces []string
	wordOf        []int // the word of each piece; nil for a model of words
	done          func(Translation)
	replaceUnk    bool
}

func newStreamSentence(m *model.Seq2Seq[float32], s StreamSentence, replaceUnk bool) streamSentence {
	words := nonNil(s.Tokens)
	pieces, wordOf := splitSentences(m, nil, [][]string{words})
	sent := streamSentence{words: words, pieces: nonNil(pieces[0]), done: s.Done, replaceUnk: replaceUnk}
	if wordOf != nil {
		sent.wordOf = wordOf[0]
	}
	return sent
}

// translation is what TranslateTokens makes of the search's list of sentence s (nil for a sentence without
// tokens): listTranslation, brought to words for a model of subwords (toWords).
func (s streamSentence) translation(m *model.Seq2Seq[float32], list []decoder.Scored) Translation {
	tr := Translation{Source: s.pieces, Output: []string{}, Attention: [][]float32{}}
	if len(s.pieces) > 0 {
		tr = listTranslation(m, s.pieces, list, s.replaceUnk)
	}
	if s.wordOf != nil {
		tr = toWords(tr, s.words, s.wordOf)
	}
	return tr
}
