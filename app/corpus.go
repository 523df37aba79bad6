package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// PhaseRecorder shows phases of long work as they go: those before training's first step (reading the corpus,
// learning subword merges, splitting words into them), and those of the lexicon and of learning merges. A
// TrainRequest's Recorder that is also a PhaseRecorder is given them; the summary line of each phase is printed
// to Stdout either way.
type PhaseRecorder interface {
	// StartPhase begins a phase of total units of work (0: not known), counted in unit ("" for bytes;
	// "merge", "iteration").
	StartPhase(name string, total int64, unit string) Phase
}

// Phase is one phase of work under way. It is a Counter: Add(n) says n more units are done, and is safe to call
// from several goroutines at a time.
type Phase interface {
	Counter
	Set(done int64) // done units so far; safe to call from any one goroutine at a time
	End()           // the phase is over (done or failed)
}

// phasesOf returns rec's PhaseRecorder, or one that shows nothing.
func phasesOf(rec model.Recorder) PhaseRecorder {
	p, _ := rec.(PhaseRecorder)
	return orNoPhases(p)
}

type nopPhases struct{}

func (nopPhases) StartPhase(string, int64, string) Phase { return nopPhase{} }

// orNoPhases is p, or a PhaseRecorder that shows nothing when p is nil.
func orNoPhases(p PhaseRecorder) PhaseRecorder {
	if p == nil {
		return nopPhases{}
	}
	return p
}

type nopPhase struct{}

func (nopPhase) Add(int64) {}
func (nopPhase) Set(int64) {}
func (nopPhase) End()      {}

// MemoryShare is the share of the machine's memory that the token ids of a training corpus may take when
// data.memory_mb is 0; a corpus with more is kept on disk.
const MemoryShare = 4 // a quarter

// fallbackMemory is the machine's memory assumed where it cannot be found out.
const fallbackMemory = 8 << 30

// corpusBudget is how many bytes of token ids the training corpus may keep in memory under cfg.
func corpusBudget(cfg model.DataConfig) int64 {
	if cfg.MemoryMB > 0 {
		return max(int64(cfg.MemoryMB*(1<<20)), 1)
	}
	total := machineMemory()
	if total <= 0 {
		total = fallbackMemory
	}
	return total / MemoryShare
}

// describeStore says where a corpus's ids are and how much memory it takes.
func describeStore(s *data.Store, budget int64, dir string) string {
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	if s.OnDisk() {
		return fmt.Sprintf("%d tokens on disk in %s (%.0f MB, over data.memory_mb %.0f), %.0f MB in memory",
			s.Tokens(), dir, mb(s.Bytes()), mb(budget), mb(s.MemoryBytes()))
	}
	return fmt.Sprintf("%d tokens in %.0f MB of memory", s.Tokens(), mb(s.MemoryBytes()))
}

// readTrainingCorpus reads and tokenizes the training corpus as ids (data.ReadCorpus), on threads goroutines,
// splits it into subwords when the model uses them, and drops the pairs data.max_len rules out. A resumed run
// (start) splits with its stored merges; a new one learns them from the whole training corpus, both sides
// together ("joint BPE", subword-nmt's learn_joint_bpe_and_vocab, which is what `attend bpe learn --input
// train.de --input train.en` learns: names, numbers and cognates become the same subwords on both sides,
// Sennrich et al. 2016, section 5), before the length filter, which then counts subwords, the model's tokens. It
// returns the merges too (nil: words), and with gold (guided alignment; nil: none) the links of each pair kept
// by its index (data.Batch.Index), checked against the pair's words (guideLinks.pairLinks) and spread over
// their subwords (align.SpreadLinks). The corpus is kept on disk beside the checkpoint when its ids are more
// than data.memory_mb; Close it when done.
func readTrainingCorpus(ctx context.Context, req TrainRequest, cfg model.Config, start *model.Checkpoint, threads int,
	gold *guideLinks) (*data.Corpus, *data.BPE, func(i int) []align.Link, error) {
	phases := phasesOf(req.Recorder)
	budget, dir := corpusBudget(cfg.Data), filepath.Dir(req.Out)
	began := time.Now()
	corpus, err := req.Train.read(ctx, phases, data.ReadOptions{Tokenizer: cfg.Data.Tokenizer(), MaxLen: cfg.Data.MaxLen,
		Threads: threads, Budget: budget, Dir: dir, KeepLines: gold != nil})
	if err != nil {
		return nil, nil, nil, stopped(ctx, "reading the training corpus", err)
	}
	var links [][]align.Link // of each pair of corpus, with gold
	if gold != nil {
		if links, err = gold.pairLinks(corpus); err != nil {
			corpus.Close()
			return nil, nil, nil, err
		}
	}
	readIn := time.Since(began)
	var subwords *data.BPE
	var learned time.Duration
	switch {
	case start != nil:
		subwords = start.Model.Subwords
	case cfg.Data.Subword == model.SubwordBPE:
		began := time.Now()
		words, counts := corpus.WordCounts()
		phase := phases.StartPhase("learning subword merges", int64(cfg.Data.Merges), "merge")
		subwords = data.LearnBPEProgress(words, counts, cfg.Data.Merges, func(n int) { phase.Set(int64(n)) })
		phase.Set(int64(cfg.Data.Merges)) // done, also when the words allowed fewer merges
		phase.End()
		if err := ctx.Err(); err != nil {
			corpus.Close()
			return nil, nil, nil, stopped(ctx, "learning subword merges", err)
		}
		learned = time.Since(began)
	}
	if subwords != nil {
		began := time.Now()
		opt := data.SplitOptions{MaxLen: cfg.Data.MaxLen, Threads: threads, Budget: budget, Dir: dir}
		var spread [][]align.Link // of each pair of split
		if gold != nil {
			spread = make([][]align.Link, 0, len(links))
			opt.Kept = func(i int, srcWordOf, tgtWordOf []int) {
				spread = append(spread, align.SpreadLinks(links[i], srcWordOf, tgtWordOf))
			}
		}
		phase := phases.StartPhase("splitting words into subwords", 0, "")
		split, err := corpus.Split(ctx, subwords, opt)
		phase.End()
		corpus.Close()
		if err != nil {
			return nil, nil, nil, stopped(ctx, "splitting the training corpus into subwords", err)
		}
		corpus, links = split, spread
		if start == nil {
			fmt.Fprintf(req.Stdout, "subwords: learned %s (data.merges %d) from both sides in %.1fs; split the corpus in %.1fs\n",
				plural.Count(len(subwords.Merges), "BPE merge"), cfg.Data.Merges, learned.Seconds(), time.Since(began).Seconds())
		} else {
			fmt.Fprintf(req.Stdout, "subwords: split the corpus with the checkpoint's %s in %.1fs\n", plural.Count(len(subwords.Merges), "BPE merge"), time.Since(began).Seconds())
		}
	}
	fmt.Fprintf(req.Stdout, "training data: %s; read in %.1fs, %s\n", corpus.Report, readIn.Seconds(), describeStore(corpus.Pairs, budget, dir))
	if corpus.Pairs.Len() == 0 {
		corpus.Close()
		return nil, nil, nil, fmt.Errorf("no training pairs left after filtering (%s)", corpus.Report)
	}
	var guide func(i int) []align.Link
	if gold != nil {
		guide = func(i int) []align.Link { return links[i] }
	}
	return corpus, subwords, guide, nil
}

// read checks c (check) and reads it (data.ReadCorpus), showing the phase to phases; opt's Progress is set here.
func (c Corpus) read(ctx context.Context, phases PhaseRecorder, opt data.ReadOptions) (*data.Corpus, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	files := data.CorpusFiles{Src: c.Src, Tgt: c.Tgt, TSV: c.TSV}
	phase := phases.StartPhase("reading "+c.String(), files.Size(), "")
	defer phase.End()
	opt.Progress = phase.Set
	return data.ReadCorpus(ctx, files, opt)
}

// check reports a corpus named by the wrong mix of files.
func (c Corpus) check() error {
	switch {
	case c.TSV != "" && (c.Src != "" || c.Tgt != ""):
		return fmt.Errorf("give either a TSV file or source and target files, not both")
	case c.TSV == "" && (c.Src == "" || c.Tgt == ""):
		return fmt.Errorf("need both a source and a target file (got %q and %q)", c.Src, c.Tgt)
	}
	return nil
}

// stopped returns err, or the ErrStopped error of an interruption during what when ctx was cancelled.
func stopped(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while %s: %w", what, ErrStopped)
	}
	return err
}

// backgroundLexicon learns a model's lexicon (for translate --shortlist) on goroutines of its own while
// training runs, so that it does not hold up the first step: it starts once the first step is done. Checkpoints
// written before it is ready have no lexicon; install adds it to the model at the first save after, and finish
// waits for it at the end of training and adds it to the checkpoints that lack it. Training does not depend on
// the lexicon, so a run resumed from a checkpoint without one (which learns it again, the same table from the
// same corpus) trains exactly as the uninterrupted run.
type backgroundLexicon struct {
	ctx     context.Context
	cancel  context.CancelFunc
	m       *model.Seq2Seq[float32]
	pairs   data.Source
	threads int
	once    sync.Once // starts learning
	started bool
	done    chan struct{}
	took    time.Duration
	table   *lexicon.Table
	err     error
	told    bool // install has said it is in
}

// newLexicon prepares to learn the lexicon of m from pairs on threads goroutines.
func newLexicon(ctx context.Context, m *model.Seq2Seq[float32], pairs data.Source, threads int) *backgroundLexicon {
	ctx, cancel := context.WithCancel(ctx)
	return &backgroundLexicon{ctx: ctx, cancel: cancel, m: m, pairs: pairs, threads: threads, done: make(chan struct{})}
}

// start starts learning, once; it is called from the training goroutine.
func (l *backgroundLexicon) start() {
	l.once.Do(func() {
		l.started = true
		srcSize, tgtSize := l.m.SrcVocab.Size(), l.m.TgtVocab.Size()
		go func() {
			defer close(l.done)
			began := time.Now()
			opts := lexicon.DefaultOptions()
			opts.Threads = l.threads
			l.table, l.err = lexicon.LearnFrom(l.ctx, l.pairs, srcSize, tgtSize, opts)
			l.took = time.Since(began)
		}()
	})
}

// ready reports whether learning has ended.
func (l *backgroundLexicon) ready() bool {
	if !l.started {
		return false
	}
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// install gives the model the lexicon if it is ready and the model has none yet, and says so on w. It is called
// before each save, from the training goroutine.
func (l *backgroundLexicon) install(w io.Writer) {
	if l.m.Lexicon != nil || !l.ready() || l.err != nil {
		return
	}
	l.m.Lexicon = l.table
	if !l.told {
		l.told = true
		fmt.Fprintf(w, "lexicon: IBM Model 1 translation candidates of each source word (for translate --shortlist) learned in %.1fs beside training; saved with every checkpoint from now on\n",
			l.took.Seconds())
	}
}

// stop cancels learning and waits for its goroutines to end.
func (l *backgroundLexicon) stop() {
	l.cancel()
	if l.started {
		<-l.done
	}
}

// finish waits for the lexicon after training has ended (starting it if no step started it), gives it to the
// model, and adds it to each of the checkpoints at paths that exists and has none (written before it was
// ready).
func (l *backgroundLexicon) finish(ctx context.Context, w io.Writer, paths ...string) error {
	if l.m.Lexicon != nil {
		return nil
	}
	l.start()
	if !l.ready() {
		fmt.Fprintln(w, "lexicon: waiting for the translation candidates of each source word (for translate --shortlist), learned beside training")
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return fmt.Errorf("interrupted while learning the lexicon; the checkpoints have none (attend train --resume, or attend lexicon, adds it): %w", ErrStopped)
	}
	if l.err != nil {
		return fmt.Errorf("lexicon: %w", l.err)
	}
	l.m.Lexicon = l.table
	// Training's gradients, optimizer moments and scratch are garbage now: free them before a checkpoint is
	// loaded in their place, so that the run's peak memory stays that of training.
	debug.FreeOSMemory()
	for _, path := range paths {
		ck, err := model.Load(path)
		if err != nil || ck.Model.Lexicon != nil {
			continue // not written (a best checkpoint before any validation), or it has one
		}
		ck.Model.Lexicon = l.table
		if err := model.Save(path, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "lexicon: IBM Model 1 translation candidates of each source word (for translate --shortlist) learned in %.1fs beside training; added to %s\n",
		l.took.Seconds(), strings.Join(paths, " and "))
	return nil
}

// lexiconStarter is a training Recorder that starts the background lexicon when the first step is done, and
// passes every event on to the Recorder it embeds.
type lexiconStarter struct {
	model.Recorder
	lex *backgroundLexicon
}

func (r lexiconStarter) BatchDone() {
	r.lex.start()
	r.Recorder.BatchDone()
}

// nopRecorder is the Recorder of a run nobody watches, for lexiconStarter to pass the events on to.
type nopRecorder struct{}

func (nopRecorder) EpochStart(model.EpochStart) {}
func (nopRecorder) BatchDone()                  {}
func (nopRecorder) Logged(model.StepLog)        {}
func (nopRecorder) Validated(model.ValidLog)    {}
func (nopRecorder) EpochEnd()                   {}
