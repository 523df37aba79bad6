package app

import (
	"context"
	"fmt"
	"io"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/wordalign"
)

// AlignOptions is everything `attend align` reads from its command line.
type AlignOptions struct {
	Streams
	Model, Reverse, Sym, Output, Gold string
	Corpus                            Corpus
	OneBased, Tokenized, DecoderAttn  bool
	Threshold                         float64 // 0 to 1, as the flag checks it
	Batch, MaxLen                     int
	// Layer is the Transformer decoder block whose attention links the words, in both directions (1 to
	// model.layers; 0: each checkpoint's model.attention_layer).
	Layer int
	// Statistical aligns with the built-in statistical aligner instead of Model, training StatisticalModel
	// (wordalign.ModelOptions).
	Statistical, KeepCase bool
	StatisticalModel      string
	Iterations, Threads   int
	// Train trains, in this directory, the two models (source→target and target→source, AlignerConfig with
	// Epochs epochs, 0: the preset's) whose alignment attention then links the corpus, symmetrized by Sym
	// (trainAligner); Recorder shows their training (nil: nothing).
	Train    string
	Epochs   int
	Recorder model.Recorder
	preset   *model.Config // instead of AlignerConfig, for tests
	// Given holds the names of the flags the command line gave ("max-len"): a flag given where it has no
	// meaning is refused.
	Given map[string]bool
}

// RunAlign checks o, aligns the corpus by a model's attention or by the statistical aligner, writes the links
// to o.Output (standard output when empty or "-"), and prints the scores against o.Gold when given (on
// o.Stdout, or o.Stderr when the links go to standard output).
func RunAlign(ctx context.Context, o AlignOptions) (err error) {
	modelOnly := []string{"reverse", "threshold", "batch", "max-len", "decoder-attention", "layer"}
	statisticalOnly := []string{"iterations", "keep-case", "statistical-model"}
	switch {
	case o.Statistical && o.Model != "" || o.Train != "" && (o.Statistical || o.Model != ""):
		return fmt.Errorf("give one of --model, --statistical and --train, not several")
	case !o.Statistical && o.Model == "" && o.Train == "":
		return fmt.Errorf("give --model CKPT to align by a model's attention, --statistical to align without one, or --train DIR to train the models that align")
	case o.Given["epochs"] && o.Train == "":
		return fmt.Errorf("--epochs is an option of --train")
	case o.Epochs < 0:
		return fmt.Errorf("--epochs is %d; want at least 1 (0: the preset's)", o.Epochs)
	case o.Corpus.Empty():
		return fmt.Errorf("give the sentence pairs: --src FILE --tgt FILE, or --data FILE")
	case o.Batch < 1:
		return fmt.Errorf("--batch is %d; want at least 1", o.Batch)
	case o.Iterations < 1:
		return fmt.Errorf("--iterations is %d; want at least 1", o.Iterations)
	case o.Threads < 0:
		return fmt.Errorf("--threads is %d; want 0 (every core) or more", o.Threads)
	case o.Given["max-len"] && o.MaxLen < 1:
		return fmt.Errorf("--max-len is %d; want at least 1", o.MaxLen)
	case !o.Statistical && o.Train == "" && o.Given["sym"] && o.Reverse == "":
		return fmt.Errorf("--sym needs --reverse: a model trained in the other direction")
	case o.Given["one-based"] && o.Gold == "":
		return fmt.Errorf("--one-based describes the --gold file; give one")
	}
	for _, name := range statisticalOnly {
		if !o.Statistical && o.Given[name] {
			return fmt.Errorf("--%s is an option of --statistical", name)
		}
	}
	for _, name := range []string{"reverse", "decoder-attention", "layer"} {
		if o.Train != "" && o.Given[name] {
			return fmt.Errorf("--%s is an option of alignment by a model (--model), not of --train", name)
		}
	}
	for _, name := range modelOnly {
		if o.Statistical && o.Given[name] {
			return fmt.Errorf("--%s is an option of alignment by a model (--model), not of --statistical", name)
		}
	}
	switch {
	case o.Sym != "":
	case o.Train != "":
		o.Sym = string(AlignerSym)
	case o.Statistical:
		o.Sym = string(align.GrowDiagFinalAnd)
	default:
		o.Sym = string(align.GrowDiagFinal)
	}
	if o.Train != "" && !o.Given["threshold"] {
		o.Threshold = AlignerThreshold
	}
	if err := align.Symmetrization(o.Sym).Validate(); err != nil {
		return fmt.Errorf("--sym: %w", err)
	}
	if o.Output == "-" {
		o.Output = ""
	}
	forward, reverse := "", ""
	if o.Train != "" {
		forward, reverse = alignerCheckpoints(o.Train)
	}
	inputs := []NamedPath{{Role: "--model", Path: o.Model}, {Role: "the source→target model of --train", Path: forward},
		{Role: "the target→source model of --train", Path: reverse}, {Role: "--src", Path: o.Corpus.Src}, {Role: "--tgt", Path: o.Corpus.Tgt},
		{Role: "--data", Path: o.Corpus.TSV}, {Role: "--gold", Path: o.Gold}, {Role: "--reverse", Path: o.Reverse}}
	if err := CheckOutputs([]NamedPath{{Role: "--output", Path: o.Output, Example: "alignments.txt"}}, inputs); err != nil {
		return err
	}
	gold, err := readGold(o.Gold, o.OneBased)
	if err != nil {
		return err
	}
	if o.Train != "" {
		if err := trainAligner(ctx, &o); err != nil {
			return err
		}
	}
	report := o.Stderr
	if o.Output != "" {
		report = o.Stdout
	}
	var fs files
	defer fs.close(&err)
	output, err := fs.orStdout(o.Output, o.Stdout)
	if err != nil {
		return err
	}
	var scores align.Scores
	if o.Statistical {
		scores, err = alignStatistical(ctx, o, gold, output)
	} else {
		scores, err = alignByModel(ctx, o, gold, output)
	}
	if err != nil {
		return err
	}
	if o.Gold != "" {
		printScores(report, scores)
	}
	return nil
}

// alignByModel aligns by the attention of o.Model (and o.Reverse).
func alignByModel(ctx context.Context, o AlignOptions, gold [][]align.Link, output io.Writer) (align.Scores, error) {
	ck, err := model.Load(o.Model)
	if err != nil {
		return align.Scores{}, err
	}
	req := AlignRequest{Model: ck.Model, Lowercase: ck.Config.Data.Lowercase, Corpus: o.Corpus, Tokenized: o.Tokenized,
		Threshold: o.Threshold, DecoderAttention: o.DecoderAttn, Batch: o.Batch, Output: output, Gold: gold, GoldName: o.Gold, OneBasedGold: o.OneBased,
		MaxLen: LengthLimit(ck.Config), Warn: o.Stderr, Progress: o.Progress}
	if o.MaxLen > 0 {
		req.MaxLen = o.MaxLen
	}
	if o.Reverse != "" {
		rev, err := model.Load(o.Reverse)
		if err != nil {
			return align.Scores{}, err
		}
		req.Reverse, req.Sym = rev.Model, align.Symmetrization(o.Sym)
	}
	if o.Layer != 0 {
		for _, m := range []*model.Seq2Seq[float32]{req.Model, req.Reverse} {
			if m == nil {
				continue
			}
			if err := m.SetAttentionLayer(o.Layer); err != nil {
				return align.Scores{}, fmt.Errorf("--layer %d: %w", o.Layer, err)
			}
		}
	}
	UseThreads(o.Stderr, o.Threads, "--threads")
	return Align(ctx, req)
}

// alignStatistical aligns with the built-in statistical aligner, showing its progress.
func alignStatistical(ctx context.Context, o AlignOptions, gold [][]align.Link, output io.Writer) (align.Scores, error) {
	var tok data.Tokenizer = data.NewRegexTokenizer(!o.KeepCase)
	if o.Tokenized {
		tok = data.WhitespaceTokenizer{Lowercase: !o.KeepCase}
	}
	opts, err := wordalign.ModelOptions(o.StatisticalModel)
	if err != nil {
		return align.Scores{}, fmt.Errorf("--statistical-model: %w", err)
	}
	opts.Iterations, opts.Workers = o.Iterations, UseThreads(o.Stderr, o.Threads, "--threads")
	progress := &AlignerProgress{Phases: orNoPhases(o.Progress), Stats: o.Stderr}
	opts.Progress = progress.Report
	defer progress.End()
	return AlignStatistical(ctx, StatisticalAlignRequest{Corpus: o.Corpus, Tokenizer: tok, Options: opts,
		Sym: align.Symmetrization(o.Sym), Output: output, Gold: gold, GoldName: o.Gold, OneBasedGold: o.OneBased})
}

// printScores prints alignment scores on one line.
func printScores(w io.Writer, s align.Scores) {
	fmt.Fprintf(w, "precision %.4f  recall %.4f  AER %.4f  (%s: %s, %d sure, %d hit sure, %d hit possible)\n",
		s.Precision(), s.Recall(), s.AER(), plural.Count(s.Sentences, "sentence pair"), plural.Count(s.Predicted, "predicted link"), s.Sure, s.HitSure, s.HitPossible)
}

// readGold reads the Pharaoh file of gold links at path (.gz is read directly; nil for ""), whose positions
// count from 1 with oneBased.
func readGold(path string, oneBased bool) ([][]align.Link, error) {
	if path == "" {
		return nil, nil
	}
	f, err := data.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return align.ReadPharaoh(f, path, oneBased)
}
