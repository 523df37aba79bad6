package app

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// LearnLexicon gives a loaded model the lexicon attend train would have learned for it: it reads corpus as
// training does (the model's tokenizer, its subword merges, the length filter of data.max_len) and estimates
// each source word's likely translations (lexicon.Learn) on every CPU. It returns the number of sentence pairs
// used. A corpus the wrong way round for the model (its source side in the model's target language) is an error.
// Its phases (reading, splitting into subwords, the EM iterations) are shown to phases (nil: nowhere).
func LearnLexicon(ctx context.Context, ck *model.Checkpoint, corpus Corpus, phases PhaseRecorder) (int, error) {
	phases = orNoPhases(phases)
	m, cfg := ck.Model, ck.Config.Data
	threads := runtime.GOMAXPROCS(0)
	c, err := corpus.read(ctx, phases, data.ReadOptions{Tokenizer: cfg.Tokenizer(), MaxLen: cfg.MaxLen, Threads: threads,
		Budget: corpusBudget(cfg)})
	if err != nil {
		return 0, stopped(ctx, "reading the corpus", err)
	}
	defer func() { c.Close() }()
	if m.Subwords != nil {
		phase := phases.StartPhase("splitting words into subwords", 0, "")
		split, err := c.Split(ctx, m.Subwords, data.SplitOptions{MaxLen: cfg.MaxLen, Threads: threads, Budget: corpusBudget(cfg)})
		phase.End()
		c.Close()
		if err != nil {
			return 0, stopped(ctx, "splitting the corpus into subwords", err)
		}
		c = split
	}
	if c.Pairs.Len() == 0 {
		return 0, fmt.Errorf("lexicon: no sentence pairs of %s left after the length filter (data.max_len %d)", corpus, cfg.MaxLen)
	}
	if err := checkDirection(corpus, m.SrcVocab, m.TgtVocab, corpusSide(c, false), corpusSide(c, true)); err != nil {
		return 0, fmt.Errorf("lexicon: %w", err)
	}
	c.Encode(m.SrcVocab, m.TgtVocab)
	opts := lexicon.DefaultOptions()
	opts.Threads = threads
	phase := phases.StartPhase("learning the lexicon (IBM Model 1)", int64(opts.Iterations), "iteration")
	opts.Progress = func(n int) { phase.Set(int64(n)) }
	lex, err := lexicon.LearnFrom(ctx, c.Pairs, m.SrcVocab.Size(), m.TgtVocab.Size(), opts)
	phase.End()
	if err != nil {
		return 0, stopped(ctx, "learning the lexicon", err)
	}
	m.Lexicon = lex
	return c.Pairs.Len(), nil
}

// corpusSide is one side of a corpus read as ids, as checkVocabularies and checkDirection count it.
func corpusSide(c *data.Corpus, target bool) tokenCounts {
	tokens, counts := c.Counts(target)
	return tokenCounts{tokens: tokens, counts: counts}
}

// LexiconOptions is everything `attend lexicon` reads from its command line.
type LexiconOptions struct {
	Streams
	Model  string // the checkpoint to add the lexicon to
	Out    string // the checkpoint to write ("": Model, replaced atomically)
	Corpus Corpus
}

// RunLexicon learns the lexicon of o.Model from o.Corpus (LearnLexicon), writes the checkpoint with it to o.Out
// and reports it on o.Stdout.
func RunLexicon(ctx context.Context, o LexiconOptions) error {
	if o.Out == "" {
		o.Out = o.Model
	}
	// Out may be Model: the checkpoint is read whole, then replaced atomically.
	inputs := []NamedPath{{Role: "--src", Path: o.Corpus.Src}, {Role: "--tgt", Path: o.Corpus.Tgt}, {Role: "--tsv", Path: o.Corpus.TSV},
		{Role: "--model", Path: o.Model, Replaceable: true}}
	if err := CheckOutputs(CheckpointOutputs("--out", o.Out), inputs); err != nil {
		return err
	}
	ck, err := model.Load(o.Model)
	if err != nil {
		return err
	}
	began := time.Now()
	n, err := LearnLexicon(ctx, ck, o.Corpus, o.Progress)
	if err != nil {
		return err
	}
	if _, err := checkpoint.RemoveStale(o.Out); err != nil {
		return err
	}
	if err := model.Save(o.Out, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
		return err
	}
	fmt.Fprintf(o.Stdout, "lexicon of %s learned from a corpus of %s in %.1fs; written to %s\n",
		plural.Count(len(ck.Model.Lexicon.Best), "source word"), plural.Count(n, "sentence pair"), time.Since(began).Seconds(), o.Out)
	return nil
}
