package app

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// AlignerConfig is the preset of `attend align --train` (configs/align.yaml holds the same values): the recipe
// of docs/alignment.md's full-context alignment — the "small" model on lowercased words (configs/small.yaml),
// `general` attention after the decoder reads the previous word, a full-context alignment attention guided by
// the statistical aligner's links (train.guided_alignment auto) with weight 1, 15 epochs.
func AlignerConfig() model.Config {
	cfg := model.Default()
	cfg.Data.Lowercase, cfg.Data.Subword, cfg.Data.Merges = true, model.SubwordNone, 0 // configs/small.yaml
	cfg.Model.Attention, cfg.Model.AttendAfterInput, cfg.Model.FullContextAlignment = "general", true, true
	cfg.Train.Epochs, cfg.Train.GuidedAlignment, cfg.Train.GuidedAlignmentWeight = 15, model.GuideAuto, 1
	return cfg
}

// How `attend align --train` combines its two models' alignment attention unless --sym and --threshold say
// otherwise: the links whose weight is at least AlignerThreshold in both directions. Chosen on the Hansards
// lines 1–200 with the preset's 15 epochs (docs/alignment.md: AER 0.163 there, against 0.216 for
// grow-diag-final-and of the two argmaxes).
const (
	AlignerSym       = align.Intersection
	AlignerThreshold = 0.25
)

// alignerCheckpoints are the checkpoints of the two models of `attend align --train dir`, source→target and
// target→source, each with NAME.align (the statistical aligner's links that guide it) and NAME.metrics.jsonl
// beside it.
func alignerCheckpoints(dir string) (forward, reverse string) {
	return filepath.Join(dir, "forward.ckpt"), filepath.Join(dir, "reverse.ckpt")
}

// trainAligner trains, in o.Train, the two models whose alignment attention `attend align --train` links by —
// source→target and target→source, AlignerConfig with o.Epochs epochs (0: the preset's) on o.Threads threads,
// each guided by the statistical aligner's links of the corpus (train.guided_alignment auto) — and sets o.Model
// and o.Reverse to their checkpoints. Each stage keeps its result in o.Train, so that the same command run again
// after an interruption goes on where it stopped: a model trained for the epochs asked is not trained again, a
// model begun is resumed from its checkpoint (which reads its links from NAME.align), and a corpus given as one
// file (--data) is split once into the two files the models train on, source.txt and target.txt. A directory
// is of one corpus (claimAlignerDir): a run on another is refused before it reads or writes anything there.
func trainAligner(ctx context.Context, o *AlignOptions) error {
	if err := os.MkdirAll(o.Train, 0o755); err != nil {
		return fmt.Errorf("--train: %w", err)
	}
	if err := claimAlignerDir(o.Train, o.Corpus); err != nil {
		return err
	}
	corpus, err := alignerCorpus(o.Train, o.Corpus)
	if err != nil {
		return err
	}
	cfg := AlignerConfig()
	if o.preset != nil {
		cfg = *o.preset
	}
	epochs := cmp.Or(o.Epochs, cfg.Train.Epochs)
	overrides := func(c *model.Config) error {
		c.Train.Epochs, c.Train.Threads = epochs, o.Threads
		return nil
	}
	overrides(&cfg)
	o.Model, o.Reverse = alignerCheckpoints(o.Train)
	for k, out := range []string{o.Model, o.Reverse} {
		train := corpus
		if k == 1 {
			train = Corpus{Src: corpus.Tgt, Tgt: corpus.Src}
		}
		req := TrainRequest{Config: cfg, Overrides: overrides, Train: train, Out: out, Stdout: o.Stderr, Recorder: o.Recorder}
		prog, err := model.ReadProgress(out)
		switch {
		case err == nil && prog.Epoch >= epochs:
			fmt.Fprintf(o.Stderr, "%s: trained for %s already (not trained again)\n", out, plural.Count(prog.Epoch, "epoch"))
			continue
		case err == nil:
			req.Resume = out
		case errors.Is(err, fs.ErrNotExist):
			// No checkpoint yet: links there are of a run stopped after the statistical aligner wrote them and
			// before its first checkpoint, which no checkpoint records (train would refuse to replace them).
			if err := os.Remove(GuidePath(out)); err == nil {
				fmt.Fprintf(o.Stderr, "removed %s, the links of a run that stopped before its first checkpoint\n", GuidePath(out))
			}
		default:
			return fmt.Errorf("--train: %w", err)
		}
		fmt.Fprintf(o.Stderr, "aligner: training %s (%s, %s)\n", out, train, plural.Count(epochs, "epoch"))
		if _, err := Train(ctx, req); err != nil {
			return fmt.Errorf("--train %s: %w", o.Train, err)
		}
	}
	return nil
}

// alignerStamp is the file in the directory of `attend align --train` that says which corpus its models and
// files are of: the SHA-256 of the corpus's files, then their paths.
const alignerStamp = "corpus.sha256"

// claimAlignerDir makes sure that the directory of `attend align --train` is of corpus c: it writes the corpus's
// stamp (alignerStamp) in a directory without one, and refuses one whose stamp is another corpus's, whose models
// and split files a run would otherwise take for c's (the links would be those of models of the other corpus).
func claimAlignerDir(dir string, c Corpus) error {
	paths := []string{c.TSV}
	if c.TSV == "" {
		paths = []string{c.Src, c.Tgt}
	}
	h := sha256.New()
	for _, path := range paths {
		fmt.Fprintf(h, "%d\n", len(paths)) // (one file or two: a TSV is never the two files' concatenation)
		if err := hashFile(h, path); err != nil {
			return fmt.Errorf("--train: %w", err)
		}
	}
	stamp := fmt.Sprintf("sha256 %x\n%s\n", h.Sum(nil), strings.Join(paths, "\n"))
	path := filepath.Join(dir, alignerStamp)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return checkpoint.WriteFile(path, func(w io.Writer) error {
			_, err := io.WriteString(w, stamp)
			return err
		})
	case err != nil:
		return fmt.Errorf("--train: %w", err)
	}
	oldSum, oldPaths, _ := strings.Cut(string(old), "\n")
	if sum, _, _ := strings.Cut(stamp, "\n"); sum != oldSum {
		return fmt.Errorf("--train %s holds the aligner of another corpus (%s, says %s): give another directory, or "+
			"remove this one to start again", dir, strings.Join(strings.Split(strings.TrimSpace(oldPaths), "\n"), " and "), path)
	}
	return nil
}

// alignerCorpus returns c as two files, source then target, as the models of `attend align --train dir` train
// on them in both directions: c itself, or for a corpus in one file (--data), its sides written to dir once,
// each line the words of its side separated by single spaces (attend's tokenizer reads the same tokens).
func alignerCorpus(dir string, c Corpus) (Corpus, error) {
	if c.TSV == "" {
		return c, nil
	}
	split := Corpus{Src: filepath.Join(dir, "source.txt"), Tgt: filepath.Join(dir, "target.txt")}
	if _, err := os.Stat(split.Tgt); err == nil {
		return split, nil
	}
	pairs, err := c.Read(data.WhitespaceTokenizer{})
	if err != nil {
		return split, err
	}
	for _, side := range []struct {
		path string
		text func(data.Pair) []string
	}{{split.Src, func(p data.Pair) []string { return p.Src }}, {split.Tgt, func(p data.Pair) []string { return p.Tgt }}} {
		var b strings.Builder
		for _, p := range pairs {
			b.WriteString(strings.Join(side.text(p), " "))
			b.WriteByte('\n')
		}
		if err := checkpoint.WriteFile(side.path, func(w io.Writer) error {
			_, err := io.WriteString(w, b.String())
			return err
		}); err != nil {
			return split, fmt.Errorf("--train: %w", err)
		}
	}
	return split, nil
}
