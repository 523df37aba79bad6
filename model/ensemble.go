package model

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// SameText reports, as an error naming what differs, whether two checkpoints read or write text differently:
// in their source or target vocabularies, their subword merges, or the data settings that turn a line of text
// into their tokens (data.lowercase, and data.subword, which decides whether the "@@" markers of text split
// beforehand are kept). Models that agree on all of these can be ensembled (NewEnsemble), whatever their
// architectures and types.
func SameText(a, b *Checkpoint) error {
	var differ []string
	for _, c := range Diff(a.Config, b.Config) {
		if c.Key == "data.lowercase" || c.Key == "data.subword" {
			differ = append(differ, c.String())
		}
	}
	if err := sameVocabularies(a.Model, b.Model); err != nil {
		differ = append(differ, err.Error())
	}
	if len(differ) > 0 {
		return errors.New(strings.Join(differ, "; "))
	}
	return nil
}

// Ensemble is models that read and write the same text (SameText), translated together: at every step each
// model scores the next word from its own state (its decoder.Session), and the search ranks words by the mean of
// their log-probabilities (decoder.Greedy, decoder.Beam). The models may be of different types. Its first
// model's vocabularies, subword merges, tokenizer settings and lexicon are the ensemble's, and its attention is
// the translations'. An Ensemble of one model searches as that model's own decoder does (with bfloat16 products
// and shortlists where asked for).
type Ensemble struct {
	Models []*Seq2Seq[float32]
}

// NewEnsemble returns the ensemble of the checkpoints cks, loaded from paths, in that order. Each must read and
// write the same text as the first (SameText): the error names the two checkpoints and what differs.
func NewEnsemble(paths []string, cks []*Checkpoint) (*Ensemble, error) {
	if len(cks) == 0 || len(paths) != len(cks) {
		return nil, fmt.Errorf("ensemble: %d checkpoints and %d paths; want at least one of each, as many", len(cks), len(paths))
	}
	models := make([]*Seq2Seq[float32], len(cks))
	for i, ck := range cks {
		if err := SameText(cks[0], ck); err != nil {
			return nil, fmt.Errorf("ensemble: %s and %s read or write different text, and an ensemble averages the models' "+
				"log-probabilities of the same target tokens after the same source tokens: %w", paths[0], paths[i], err)
		}
		models[i] = ck.Model
	}
	return &Ensemble{Models: models}, nil
}

// Single is the ensemble of m alone, whose searches are m's own.
func Single(m *Seq2Seq[float32]) *Ensemble { return &Ensemble{Models: []*Seq2Seq[float32]{m}} }

// Job is a batch for Ensemble.Translate: the caller's id of each of its real rows (Batch.Real of them, in the
// batch's order) and, optionally, each row's shortlist (decoder.Shortlist).
type Job struct {
	Batch     *data.Batch
	IDs       []int
	Shortlist *decoder.Shortlist[float32]
	// Beam, optional, is the beam search settings of the job's sentences in a running beam search (Search.Running),
	// in place of Search.Beam: of the same Width (decoder.Block's Beam).
	Beam *decoder.BeamOptions
}

// Search is how Ensemble.Translate searches: greedily, or with beam search when Beam is set, from <s> to </s>
// at most MaxLen words (a beam search's own limit is Beam.MaxLen), its output layer on Products (decoder.Output).
type Search struct {
	MaxLen   int
	Beam     *decoder.BeamOptions
	Products kernels.Products
	// Rows is the running batch's sentences per core: greedy search keeps a batch of Rows rows per core full
	// across jobs when every model's decoder.Session is a decoder.Joiner, and so does beam search with Running,
	// Beam.Width rows per sentence.
	Rows int
	// Running makes beam search keep a running batch too (decoder.BeamQueue), as a server wants: a sentence
	// starts at once, and its answer leaves as soon as it is done. Without it, a beam search decodes a job at a
	// time on each core, which keeps each sentence's rows where a batch of the job puts them (with OpenBLAS, a
	// row's products depend on its place in the batch in the last bits: translate's output stays the same).
	Running bool
	// Jobs is how many jobs there are, when known (0 when not): fewer jobs than cores use fewer cores.
	Jobs int
	// Stop, when closed, stops the searches under way before their next step, their sentences left undone.
	Stop <-chan struct{}
}

// Translate decodes the sentences of the jobs that next returns (nil when there are no more) on every core, with
// single-threaded matrix products, and gives each sentence's n-best list (one hypothesis, without its score, for
// greedy search) to done with its job's id, on Translate's goroutine, as each ends. next is called on
// Translate's goroutine whenever there is room for another job, so that it may encode lazily; a job without
// IDs means that none is waiting yet: next is asked again when a search moves on, and Translate returns when
// none is under way. It chooses the search: greedy search (and beam search with s.Running) of models whose
// decoder.Sessions are decoder.Joiners keeps one running batch of s.Rows sentences per core full, stepped by a
// goroutine per core (decoder.GreedyQueue, decoder.BeamQueue:
// each advances its share of the rows, computes its share of the vocabulary for all of them, then picks the best
// words of its rows), each ended sentence's row refilled at once, which beats a batch per core: the output
// layer's product reads its weights once per step for twice the rows; any other search decodes a job at a time
// on each core.
func (e *Ensemble) Translate(s Search, next func() *Job, done func(id int, list []decoder.Scored)) error {
	if threads := backend.BLASThreads(); threads > 1 {
		// Two layers of threads on two cores cost 30% here.
		backend.SetBLASThreads(1)
		defer backend.SetBLASThreads(threads)
	}
	cores := max(1, runtime.GOMAXPROCS(0))
	if s.Jobs > 0 {
		cores = min(cores, s.Jobs)
	}
	first := next()
	if first == nil || len(first.IDs) == 0 {
		return nil // none waiting, none under way
	}
	if s.Beam == nil || s.Running { // the first job's Sessions say whether the models' can join a running batch
		if started := e.block(first); joiners(started.Sessions) {
			return e.queue(s, cores, started, next, done)
		} // (if not, the first job is encoded again)
	}
	type result struct {
		job   *Job
		lists [][]decoder.Scored
		err   error
	}
	jobs, results := make(chan *Job), make(chan result)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(jobs)
	for range cores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				lists, err := e.search(s, j.Batch, j.Shortlist)
				results <- result{j, lists, err}
			}
		}()
	}
	var firstErr error
	busy, waiting := 0, first
	for waiting != nil || busy > 0 {
		var send chan<- *Job
		if waiting != nil && len(waiting.IDs) > 0 {
			send = jobs
		} else if busy == 0 {
			break // none waiting, none under way
		}
		select {
		case send <- waiting:
			busy++
			waiting = next()
		case r := <-results:
			busy--
			switch {
			case errors.Is(r.err, decoder.ErrStopped): // the job's sentences stay undone
			case r.err != nil:
				firstErr = cmp.Or(firstErr, r.err)
			default:
				for k, id := range r.job.IDs {
					done(id, r.lists[k])
				}
			}
			if waiting != nil && len(waiting.IDs) == 0 {
				waiting = next()
			}
		}
	}
	return firstErr
}

// queue is Translate's search of models whose Sessions are Joiners: decoder.GreedyQueue (decoder.BeamQueue when
// s.Beam is set) of first, then of the jobs that next returns, in a running batch of s.Rows sentences per core
// stepped by cores goroutines.
func (e *Ensemble) queue(s Search, cores int, first *decoder.Block[float32], next func() *Job, done func(id int, list []decoder.Scored)) error {
	blocks := func() *decoder.Block[float32] {
		if b := first; b != nil {
			first = nil
			return b
		}
		switch j := next(); {
		case j == nil:
			return nil
		case len(j.IDs) == 0:
			return &decoder.Block[float32]{}
		default:
			return e.block(j)
		}
	}
	o := decoder.GreedyOptions{Rows: s.Rows * cores, Threads: cores, Products: s.Products, Vocab: e.Models[0].TgtVocab.Size(),
		BOS: data.BOSID, EOS: data.EOSID, MaxLen: s.MaxLen, Stop: s.Stop}
	var err error
	if s.Beam != nil {
		opts := *s.Beam
		opts.Stop, o.Rows = s.Stop, o.Rows*opts.Width
		err = decoder.BeamQueue(blocks, done, o, opts)
	} else {
		err = decoder.GreedyQueue(blocks, func(id int, h decoder.Hypothesis) { done(id, []decoder.Scored{{Hypothesis: h}}) }, o)
	}
	if errors.Is(err, decoder.ErrStopped) { // the sentences under way stay undone
		return nil
	}
	return err
}

// block starts the sessions of job j as a block of decoder.GreedyQueue.
func (e *Ensemble) block(j *Job) *decoder.Block[float32] {
	return &decoder.Block[float32]{Sessions: e.sessions(j.Batch), SrcLen: j.Batch.SrcLen, Lengths: j.Batch.SrcLengths[:j.Batch.Rows],
		IDs: j.IDs, Shortlist: j.Shortlist, Beam: j.Beam}
}

// joiners reports whether sentences can join every one of sessions while it decodes others (decoder.Joiner).
func joiners(sessions []decoder.Session[float32]) bool {
	for _, s := range sessions {
		if _, ok := s.(decoder.Joiner[float32]); !ok {
			return false
		}
	}
	return true
}

// search decodes one batch as s asks, its shortlist sl (nil: none): greedily, each list one hypothesis.
func (e *Ensemble) search(s Search, b *data.Batch, sl *decoder.Shortlist[float32]) ([][]decoder.Scored, error) {
	if s.Beam != nil {
		opts := *s.Beam
		opts.Stop = s.Stop
		return e.Beam(b, opts, decoder.Output[float32]{Products: s.Products, Shortlist: sl})
	}
	hyps, err := e.Greedy(b, s.MaxLen, s.Stop)
	lists := make([][]decoder.Scored, len(hyps))
	for r, h := range hyps {
		lists[r] = []decoder.Scored{{Hypothesis: h}}
	}
	return lists, err
}

// sessions encodes a batch with every model and starts their decoding of it.
func (e *Ensemble) sessions(b *data.Batch) []decoder.Session[float32] {
	s := make([]decoder.Session[float32], len(e.Models))
	for i, m := range e.Models {
		s[i] = m.Session(b)
	}
	return s
}

// Greedy decodes a batch greedily from <s> to </s>, at most maxLen words, a batch at a time (decoder.Greedy):
// the hypotheses of its b.Real real rows. A closed stop stops it before its next step, with decoder.ErrStopped.
func (e *Ensemble) Greedy(b *data.Batch, maxLen int, stop <-chan struct{}) ([]decoder.Hypothesis, error) {
	hyps, err := decoder.Greedy(e.sessions(b), b.SrcLengths[:b.Rows], b.SrcLen, e.Models[0].TgtVocab.Size(), data.BOSID, data.EOSID, maxLen, stop)
	if err != nil {
		return nil, err
	}
	return hyps[:b.Real], nil
}

// Beam decodes a batch with beam search (decoder.Beam), its output layer computed as out says: a shortlist needs
// one model whose output layer it can cut (CanShortlist).
func (e *Ensemble) Beam(b *data.Batch, opts decoder.BeamOptions, out decoder.Output[float32]) ([][]decoder.Scored, error) {
	lists, err := decoder.Beam(e.sessions(b), b.SrcLengths[:b.Rows], b.SrcLen, e.Models[0].TgtVocab.Size(), data.BOSID, data.EOSID, opts, out)
	if err != nil {
		return nil, fmt.Errorf("ensemble: %w", err)
	}
	return lists, nil
}

// OutputRows returns the rows of the model's output layer that shortlists of its words are scored with
// (decoder.Shortlist), or nil when its output layer cannot be cut to a shortlist (a Transformer's, as yet).
func (m *Seq2Seq[T]) OutputRows() *decoder.OutputRows[T] {
	if s, ok := m.net.(shortlister[T]); ok {
		return s.outputRows()
	}
	return nil
}

// CanShortlist reports whether the model's output layer can be cut to a shortlist of words (OutputRows).
func (m *Seq2Seq[T]) CanShortlist() bool {
	_, ok := m.net.(shortlister[T])
	return ok
}
