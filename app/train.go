// Package app carries out attend's commands — train, translate, demo — on top of the library packages, so that
// cmd/attend only parses flags and every command can be tested without a command line.
package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/dist"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// Corpus names a parallel corpus: two line-aligned files, or one TSV file.
type Corpus struct {
	Src, Tgt string // line-aligned source and target files
	TSV      string // or: one file, column 1 source, column 2 target
}

// String names the corpus's files, for messages.
func (c Corpus) String() string {
	if c.TSV != "" {
		return c.TSV
	}
	return c.Src + " and " + c.Tgt
}

// Empty reports whether no file is named.
func (c Corpus) Empty() bool { return c.Src == "" && c.Tgt == "" && c.TSV == "" }

// Read reads and tokenizes the corpus.
func (c Corpus) Read(tok data.Tokenizer) ([]data.Pair, error) {
	switch {
	case c.TSV != "" && (c.Src != "" || c.Tgt != ""):
		return nil, fmt.Errorf("give either a TSV file or source and target files, not both")
	case c.TSV != "":
		return data.ReadTSV(c.TSV, tok)
	case c.Src == "" || c.Tgt == "":
		return nil, fmt.Errorf("need both a source and a target file (got %q and %q)", c.Src, c.Tgt)
	default:
		return data.ReadParallel(c.Src, c.Tgt, tok)
	}
}

// TrainRequest is everything `attend train` needs.
type TrainRequest struct {
	// Config is the configuration the user asked for: a config file or the defaults, with the command line's
	// overrides applied.
	Config model.Config
	// ConfigFile names the file Config was read from ("" for the built-in defaults). On resume, a config file
	// is compared with the checkpoint's as a whole; without one, only Overrides apply on top of the checkpoint's.
	ConfigFile  string
	Overrides   func(*model.Config) error // the command line's overrides, applied again on top of a resumed config
	Train       Corpus
	Valid       Corpus // optional
	Out         string // checkpoint path
	Resume      string // checkpoint to continue from (see model.CheckResume for what may change)
	MetricsPath string // default: Out with .metrics.jsonl
	Stdout      io.Writer
	// Recorder is the progress display (nil: none). One that is also a PhaseRecorder shows the phases before
	// the first step too.
	Recorder model.Recorder
	// Group is the set of processes training together (nil: this one). Processes other than rank 0 print
	// nothing and write nothing.
	Group dist.Group

	// lexiconAfterTraining holds the lexicon back until training has ended, for tests of checkpoints written
	// before it is ready.
	lexiconAfterTraining bool
}

// UnkWarning is the share of <unk> in a resumed run's new corpus above which Train warns that the stored
// vocabulary does not fit it.
const UnkWarning = 0.10

// Train checks every setting and output path, removes the temporaries that a run killed while saving left
// beside the checkpoints (checkpoint.RemoveStale), reads the corpora, builds or restores the model, trains it and
// prints a summary line. Nothing is written before the checks pass. A cancelled ctx stops any phase: before the
// first step with nothing written, afterwards with the position saved (a *model.InterruptedError).
func Train(ctx context.Context, req TrainRequest) (model.Summary, error) {
	if req.Group == nil {
		req.Group = dist.Single{}
	}
	lead := req.Group.Rank() == 0
	if !lead {
		req.Stdout, req.Recorder = io.Discard, nil
	}
	cfg, start, err := trainConfig(req)
	if err != nil {
		return model.Summary{}, err
	}
	if req.Out == "" {
		return model.Summary{}, fmt.Errorf("no output checkpoint path (--out)")
	}
	metricsPath := req.MetricsPath
	if metricsPath == "" {
		metricsPath = strings.TrimSuffix(req.Out, ".ckpt") + ".metrics.jsonl"
	}
	if lead {
		if err := prepareOutputs(req, metricsPath); err != nil {
			return model.Summary{}, err
		}
	}
	threads := useThreads(req.Stdout, &cfg.Train)

	corpus, subwords, err := readTrainingCorpus(ctx, req, cfg, start, threads)
	if err != nil {
		return model.Summary{}, err
	}
	defer corpus.Close()
	opts := model.TrainOptions{Config: cfg, Out: req.Out, Recorder: req.Recorder, Group: req.Group}
	if start != nil {
		opts.Model, opts.Adam, opts.Progress = start.Model, start.Adam, start.Progress
		fmt.Fprintf(req.Stdout, "resuming %s at epoch %d, step %d\n", req.Resume, start.Progress.Epoch+1, start.Progress.Step)
	} else if opts.Model, err = newModel(ctx, cfg, corpus, subwords); err != nil {
		return model.Summary{}, err
	}
	m := opts.Model
	fmt.Fprintf(req.Stdout, "model: %s\n", m.Describe())
	unknown := corpus.Encode(m.SrcVocab, m.TgtVocab)
	opts.Corpus = corpus.Pairs
	if start != nil {
		warnUnknown(req.Stdout, req.Train, unknown)
	}
	var lex *backgroundLexicon
	if m.Lexicon == nil && lead { // a new model, or one trained before lexicons existed; only checkpoints need it
		lex = newLexicon(ctx, m, corpus.Pairs, threads)
		defer lex.stop() // before the corpus it reads is closed
		opts.BeforeSave = func() { lex.install(req.Stdout) }
		if !req.lexiconAfterTraining {
			opts.Recorder = lexiconStarter{next: req.Recorder, lex: lex}
		}
	}
	if !req.Valid.Empty() {
		if opts.Valid, err = readValidation(ctx, req.Valid, cfg.Data.Tokenizer(), m); err != nil {
			return model.Summary{}, err
		}
	}
	if !lead {
		return model.Train(ctx, opts)
	}
	if n := req.Group.Size(); n > 1 {
		fmt.Fprintf(req.Stdout, "training on %d processes: each takes %d of every %d sentences\n", n, cfg.Data.Batch/n, cfg.Data.Batch)
	}
	sum, err := trainWithMetrics(ctx, opts, metricsPath, start)
	if err != nil {
		return sum, err
	}
	if lex != nil {
		paths := []string{req.Out}
		if len(opts.Valid) > 0 {
			paths = append(paths, model.BestPath(req.Out))
		}
		if err := lex.finish(ctx, req.Stdout, paths...); err != nil {
			return sum, err
		}
	}
	if len(opts.Valid) > 0 {
		by := "validation loss"
		if cfg.Train.BestByBLEU() {
			by = "validation BLEU"
		}
		fmt.Fprintf(req.Stdout, "checkpoints: %s (last), %s (best %s); metrics: %s\n", req.Out, model.BestPath(req.Out), by, metricsPath)
	} else {
		fmt.Fprintf(req.Stdout, "checkpoint: %s (no validation set, so no best checkpoint); metrics: %s\n", req.Out, metricsPath)
	}
	fmt.Fprintln(req.Stdout, sum)
	return sum, nil
}

// prepareOutputs checks that no output path is an input or a directory, and removes the temporary files that a
// run killed while saving (kill -9, a power cut) left beside the checkpoints, as large as the model. Only the
// lead process writes checkpoints, so only it may judge them.
func prepareOutputs(req TrainRequest, metricsPath string) error {
	inputs := []NamedPath{{"--src", req.Train.Src}, {"--tgt", req.Train.Tgt}, {"--data", req.Train.TSV},
		{"--valid-src", req.Valid.Src}, {"--valid-tgt", req.Valid.Tgt}, {"--valid-data", req.Valid.TSV}, {"--config", req.ConfigFile}}
	outputs := []NamedPath{{"--out", req.Out}, {"the best checkpoint", model.BestPath(req.Out)}, {"--metrics", metricsPath}}
	if err := CheckOutputs(outputs, inputs); err != nil {
		return err
	}
	for _, ckpt := range []string{req.Out, model.BestPath(req.Out)} {
		removed, err := checkpoint.RemoveStale(ckpt)
		for _, name := range removed {
			fmt.Fprintf(req.Stdout, "removed %s, left by a run that stopped while saving\n", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// useThreads holds Go, OpenBLAS and the GC to train.threads (0: every CPU; at most the CPUs there are) and
// returns that number of threads.
func useThreads(stdout io.Writer, train *model.TrainConfig) int {
	n := runtime.NumCPU()
	if train.Threads > n {
		fmt.Fprintf(stdout, "note: train.threads %d is more than the %d CPUs here; using %d\n", train.Threads, n, n)
		train.Threads = n
	}
	if train.Threads > 0 {
		n = train.Threads
	}
	runtime.GOMAXPROCS(n)
	// OpenBLAS sizes its pool to every CPU of the machine unless told: hold its products to the same threads.
	backend.SetBLASThreads(n)
	if os.Getenv("GOGC") == "" {
		// A training step allocates little (graphs and scratch are reused), so a tight GC target costs no
		// measurable time and keeps the resident set near the live heap: 0.85 GB instead of 1.2 GB on Multi30k.
		debug.SetGCPercent(25)
	}
	return n
}

// newModel builds the vocabularies of the corpus and a model over them, initialised from train.seed.
func newModel(ctx context.Context, cfg model.Config, corpus *data.Corpus, subwords *data.BPE) (*model.Seq2Seq[float32], error) {
	var m *model.Seq2Seq[float32]
	err := interruptible(ctx, "building the vocabularies", func() error {
		src, tgt := corpus.Vocabs(cfg.Data.MinFreq, cfg.Data.MaxVocab)
		var err error
		if m, err = model.New[float32](cfg.Model, src, tgt); err != nil {
			return err
		}
		m.Subwords = subwords
		return nil
	})
	if err != nil {
		return nil, err
	}
	m.Init(rand.New(rand.NewPCG(cfg.Train.Seed, 0)))
	return m, nil
}

// readValidation reads the validation corpus as the model reads text: tokenized, in its subwords, encoded
// with its vocabularies; pairs with an empty side are dropped, long ones kept.
func readValidation(ctx context.Context, valid Corpus, tok data.Tokenizer, m *model.Seq2Seq[float32]) ([]data.Example, error) {
	var vp []data.Pair
	if err := interruptible(ctx, "reading the validation corpus", func() (err error) {
		vp, err = valid.Read(tok)
		return err
	}); err != nil {
		return nil, err
	}
	if m.Subwords != nil {
		vp = SplitPairs(m.Subwords, vp)
	}
	vp, _ = data.Filter(vp, 0)
	return data.EncodeExamples(vp, m.SrcVocab, m.TgtVocab), nil
}

// trainWithMetrics runs model.Train on the lead process with its metrics file open: new, or for a resumed run
// (start) appended to after the records of steps past the checkpoint are dropped, since those steps are about
// to be trained again.
func trainWithMetrics(ctx context.Context, opts model.TrainOptions, metricsPath string, start *model.Checkpoint) (model.Summary, error) {
	mode := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if start != nil {
		mode = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		if err := trimMetrics(metricsPath, start.Progress.Step); err != nil {
			return model.Summary{}, err
		}
	}
	mf, err := os.OpenFile(metricsPath, mode, 0o644)
	if err != nil {
		return model.Summary{}, fmt.Errorf("metrics: %w", err)
	}
	opts.Metrics = mf
	sum, err := model.Train(ctx, opts)
	if cerr := mf.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("metrics: %w", cerr)
	}
	return sum, err
}

// trainConfig returns the configuration to train with and, on resume, the loaded checkpoint. A resumed run
// starts from the checkpoint's configuration (or the config file, when one is given), with the command line's
// overrides on top; model.CheckResume decides what may change, and the changes are reported once.
func trainConfig(req TrainRequest) (model.Config, *model.Checkpoint, error) {
	cfg := req.Config
	if req.Resume == "" {
		return cfg, nil, cfg.Validate()
	}
	ck, err := model.Load(req.Resume)
	if err != nil {
		return cfg, nil, err
	}
	if req.ConfigFile == "" {
		cfg = ck.Config
		if req.Overrides != nil {
			if err := req.Overrides(&cfg); err != nil {
				return cfg, nil, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, err
	}
	changes, err := model.CheckResume(ck.Config, cfg, ck.Progress)
	if err != nil {
		return cfg, nil, fmt.Errorf("%s: %w", req.Resume, err)
	}
	for _, c := range changes {
		fmt.Fprintf(req.Stdout, "resume: %s (takes effect now)\n", c)
	}
	return cfg, ck, nil
}

// warnUnknown warns when a resumed run's corpus is poorly covered by the checkpoint's vocabularies: a sign that
// it is another corpus (or another language pair) than the one the model was built on.
func warnUnknown(w io.Writer, c Corpus, u data.Unknown) {
	for _, side := range []struct {
		name       string
		unk, total int64
	}{{c.Src + c.TSV, u.SrcUnk, u.Src}, {c.Tgt + c.TSV, u.TgtUnk, u.Tgt}} {
		if share := float64(side.unk) / float64(max(side.total, 1)); share > UnkWarning {
			fmt.Fprintf(w, "warning: %.1f%% of the words of %s are unknown to the checkpoint's vocabulary (more than %.0f%%): is it the corpus the model was built on?\n",
				100*share, side.name, 100*UnkWarning)
		}
	}
}

// LearnSubwords learns BPE merges for data.subword bpe from the tokens of both sides of pairs together: one
// list of merges for the source and the target language ("joint BPE", subword-nmt's learn_joint_bpe_and_vocab).
// Joint merges split a string the same way on both sides, so names, numbers and cognates that the model must
// copy or transliterate (frequent between related languages such as German and English) become the same
// subwords on both sides (Sennrich et al. 2016, section 5); and it is what `attend bpe learn --input train.de
// --input train.en` learns, so the merges of a model can be reproduced and inspected with that command.
// The vocabularies stay separate.
func LearnSubwords(pairs []data.Pair, merges int) *data.BPE {
	srcs, tgts := sides(pairs)
	return data.LearnBPE(append(srcs, tgts...), merges)
}

// SplitPairs returns pairs with both sides split into subwords by b.
func SplitPairs(b *data.BPE, pairs []data.Pair) []data.Pair {
	srcs, tgts := sides(pairs)
	srcs, tgts = b.ApplyAll(srcs), b.ApplyAll(tgts)
	out := make([]data.Pair, len(pairs))
	for i, p := range pairs {
		p.Src, p.Tgt = srcs[i], tgts[i]
		out[i] = p
	}
	return out
}

func sides(pairs []data.Pair) (src, tgt [][]string) {
	for _, p := range pairs {
		src = append(src, p.Src)
		tgt = append(tgt, p.Tgt)
	}
	return src, tgt
}

// trimMetrics drops from the metrics log at path the records of steps after step (and a last line cut short by
// a crash), which a run resumed from a checkpoint of that step logs again: the log then follows the run that
// the weights went through. The log is rewritten through a temporary file; a missing log is left missing.
func trimMetrics(path string, step int) error {
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	var kept bytes.Buffer
	for _, line := range bytes.SplitAfter(old, []byte("\n")) {
		var rec struct {
			Step *int `json:"step"`
		}
		if !bytes.HasSuffix(line, []byte("\n")) || json.Unmarshal(line, &rec) != nil || rec.Step != nil && *rec.Step > step {
			continue
		}
		kept.Write(line)
	}
	if kept.Len() == len(old) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	_, err = tmp.Write(kept.Bytes())
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("metrics: rewrite %s after step %d: %w", path, step, err)
	}
	return nil
}
