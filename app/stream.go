package app

import (
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

// StreamSentence is a tokenized sentence for TranslateStream and what receives its translation.
type StreamSentence struct {
	Tokens []string
	Done   func(Translation)
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
	// A beam wider than the target vocabulary is cut to it, as TranslateTokens cuts it.
	opts.Beam = min(opts.Beam, m.TgtVocab.Size())
	opts.NBest = min(opts.NBest, opts.Beam)
	models, err := searchModels(m, opts)
	if err != nil {
		return err
	}
	if opts, err = opts.choose(); err != nil {
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
	search.Rows = opts.Batch
	if !opts.greedy() {
		search.Rows = beamBatchSize(opts.Batch, opts.Beam*len(models.Models), m.TgtVocab.Size()) // (as translate's)
	}
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
			var examples []data.Example
			var ids []int
			for _, s := range waiting {
				sent := newStreamSentence(m, s)
				if len(sent.pieces) == 0 {
					s.Done(sent.translation(m, nil, opts.ReplaceUnk))
					continue
				}
				inBatch[id] = sent
				examples = append(examples, data.Example{Src: m.SrcVocab.Encode(sent.pieces)})
				ids = append(ids, id)
				id++
			}
			for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: opts.Batch}, nil) {
				blk := block{batch: b, examples: examples, ids: make([]int, b.Real)}
				for r := range blk.ids {
					blk.ids[r] = ids[b.Index[r]]
				}
				entering = append(entering, blk)
			}
		}
		e := entering[0]
		entering = entering[1:]
		j := &model.Job{Batch: &e.batch, IDs: e.ids}
		if rows != nil {
			j.Shortlist = shortlistOf(m, rows, e.examples, *opts.Shortlist, &e.batch)
		}
		return j
	}
	return models.Translate(search, take, func(i int, list []decoder.Scored) {
		s := inBatch[i]
		delete(inBatch, i)
		s.done(s.translation(m, list, opts.ReplaceUnk))
	})
}

// streamSentence is a sentence of TranslateStream: its words, the model's tokens for them, and where its
// translation goes.
type streamSentence struct {
	words, pieces []string
	wordOf        []int // the word of each piece; nil for a model of words
	done          func(Translation)
}

func newStreamSentence(m *model.Seq2Seq[float32], s StreamSentence) streamSentence {
	words := nonNil(s.Tokens)
	pieces, wordOf := splitSentences(m, nil, [][]string{words})
	sent := streamSentence{words: words, pieces: nonNil(pieces[0]), done: s.Done}
	if wordOf != nil {
		sent.wordOf = wordOf[0]
	}
	return sent
}

// translation is what TranslateTokens makes of the search's list of sentence s (nil for a sentence without
// tokens): listTranslation, brought to words for a model of subwords (toWords).
func (s streamSentence) translation(m *model.Seq2Seq[float32], list []decoder.Scored, replaceUnk bool) Translation {
	tr := Translation{Source: s.pieces, Output: []string{}, Attention: [][]float32{}}
	if len(s.pieces) > 0 {
		tr = listTranslation(m, s.pieces, list, replaceUnk)
	}
	if s.wordOf != nil {
		tr = toWords(tr, s.words, s.wordOf)
	}
	return tr
}
