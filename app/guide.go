package app

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"strings"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
	"github.com/attend-nmt/attend/wordalign"
)

// GuideSymmetrization is how train.guided_alignment auto combines the statistical aligner's two directions:
// attend align --statistical's default.
const GuideSymmetrization = align.GrowDiagFinalAnd

// GuidePath is the file where train.guided_alignment auto keeps the statistical aligner's links for the run
// whose checkpoint is out: NAME.align beside NAME.ckpt.
func GuidePath(out string) string { return strings.TrimSuffix(out, ".ckpt") + ".align" }

// guideLinks are the links of guided alignment (train.guided_alignment) of every line of the training corpus,
// in the positions of the words attend's tokenizer reads (before any subword split).
type guideLinks struct {
	lines [][]align.Link // one entry per line of the corpus's files
	file  string         // the file they were read from or written to, for messages
	// auto says they are the statistical aligner's (train.guided_alignment auto); sum is the SHA-256 of file
	// (hex), and both go in the checkpoint (model.Progress.GuideFile, made absolute) when auto.
	auto bool
	sum  string
}

// readGuideLinks returns the links of guided alignment of the run, or nil when it is not guided: those of
// train.guided_alignment's file, or with auto the statistical aligner's (autoGuide).
func readGuideLinks(ctx context.Context, req TrainRequest, cfg model.Config, start *model.Checkpoint, threads int) (*guideLinks, error) {
	switch path := cfg.Train.GuidedAlignment; path {
	case "":
		return nil, nil
	case model.GuideAuto:
		return autoGuide(ctx, req, cfg, start, threads)
	default:
		g, err := readGuideFile(path)
		if err != nil {
			return nil, fmt.Errorf("train.guided_alignment: %w", err)
		}
		return g, nil
	}
}

// guideOwner is the NamedPath.Own of the links of train.guided_alignment auto at GuidePath(out): a file of links
// is attend's own when a checkpoint records its SHA-256 (model.Progress.GuideSHA256) — the checkpoint the run
// resumes from (start), or the one at out or its best — or when it is the resumed run's file of links, which the
// run reads instead of writing.
func guideOwner(out string, start *model.Checkpoint) func(string) error {
	return func(path string) error {
		var recorded []string
		if start != nil {
			if start.Progress.GuideFile != "" && samePath(start.Progress.GuideFile, path) {
				return nil
			}
			recorded = append(recorded, start.Progress.GuideSHA256)
		}
		for _, ck := range []string{out, model.BestPath(out)} {
			if prog, err := model.ReadProgress(ck); err == nil {
				recorded = append(recorded, prog.GuideSHA256)
			}
		}
		sum, err := fileSHA256(path)
		if err != nil {
			return fmt.Errorf("cannot be read (%w)", err)
		}
		for _, r := range recorded {
			if r == sum {
				return nil
			}
		}
		return fmt.Errorf("is not a file of links attend wrote (no checkpoint of %s or %s records its SHA-256)", out, model.BestPath(out))
	}
}

// fileSHA256 is the SHA-256 of the file at path (hex).
func fileSHA256(path string) (string, error) {
	sum := sha256.New()
	if err := hashFile(sum, path); err != nil {
		return "", err
	}
	return hex.EncodeToString(sum.Sum(nil)), nil
}

// hashFile writes the content of the file at path to h (a hash).
func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

// readGuideFile reads a Pharaoh file of 0-based links, hashing it as it goes.
func readGuideFile(path string) (*guideLinks, error) {
	f, err := data.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := sha256.New()
	lines, err := align.ReadPharaoh(io.TeeReader(f, sum), path, false)
	if err != nil {
		return nil, err
	}
	return &guideLinks{lines: lines, file: path, sum: hex.EncodeToString(sum.Sum(nil))}, nil
}

// autoGuide returns the statistical aligner's links of the training corpus for train.guided_alignment auto. A
// resumed run whose checkpoint names the file of its links (model.Progress.GuideFile) reads them from it, as
// they are now (a file changed since it was written is noted); a new run, or one whose file is missing, aligns
// the corpus (alignTrainingCorpus) and, on the lead process, writes the links atomically to GuidePath(req.Out).
// Every process aligns the same corpus to the same links (the aligner's result does not depend on its
// threads), so each guides its own rows without waiting for another.
func autoGuide(ctx context.Context, req TrainRequest, cfg model.Config, start *model.Checkpoint, threads int) (*guideLinks, error) {
	if start != nil && start.Progress.GuideFile != "" {
		stored := start.Progress.GuideFile
		g, err := readGuideFile(stored)
		switch {
		case err == nil:
			g.auto = true
			fmt.Fprintf(req.Stdout, "guided alignment: the statistical aligner's links of the run from %s (not aligned again)\n", stored)
			if g.sum != start.Progress.GuideSHA256 {
				fmt.Fprintf(req.Stdout, "note: %s has changed since the run wrote it; guiding by it as it is now (remove it to have the statistical aligner link the corpus again)\n", stored)
			}
			return g, nil
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(req.Stdout, "guided alignment: %s, the statistical aligner's links of the run, is missing; aligning the training corpus again\n", stored)
		default:
			return nil, fmt.Errorf("train.guided_alignment auto: %w (remove it to have the statistical aligner link the corpus again)", err)
		}
	}
	began := time.Now()
	lines, err := alignTrainingCorpus(ctx, req, cfg, threads)
	if err != nil {
		return nil, err
	}
	path := GuidePath(req.Out)
	g := &guideLinks{lines: lines, file: path, auto: true}
	if req.Group.Rank() != 0 {
		return g, nil // the lead process writes the file and keeps it in the checkpoint
	}
	if g.sum, err = writeGuide(path, lines); err != nil {
		return nil, fmt.Errorf("train.guided_alignment auto: %w", err)
	}
	fmt.Fprintf(req.Stdout, "guided alignment: the statistical aligner (%s) linked %s in %.1fs; links written to %s\n",
		GuideSymmetrization, plural.Count(len(lines), "sentence pair"), time.Since(began).Seconds(), path)
	return g, nil
}

// alignTrainingCorpus runs the statistical aligner on the training corpus as attend align --statistical does
// (package wordalign, its default model in both directions, symmetrized by GuideSymmetrization) on threads
// goroutines, showing its passes as phases. It aligns the words attend's tokenizer reads with cfg, lowercased
// as the aligner has them: the positions of the training corpus before any subword split. Every line of the
// corpus is aligned (and gets a line of links), the ones training leaves out too.
func alignTrainingCorpus(ctx context.Context, req TrainRequest, cfg model.Config, threads int) ([][]align.Link, error) {
	if err := req.Train.check(); err != nil {
		return nil, err
	}
	tok := cfg.Data.Tokenizer()
	tok.Lowercase = true // lowercasing maps letters to letters: the words stay where they are
	var pairs []data.Pair
	if err := interruptible(ctx, "reading the training corpus for the statistical aligner", func() (err error) {
		pairs, err = req.Train.Read(tok)
		return err
	}); err != nil {
		return nil, err
	}
	opts, err := wordalign.ModelOptions(wordalign.DefaultModel)
	if err != nil {
		return nil, err
	}
	opts.Workers = threads
	show := &AlignerProgress{Phases: phasesOf(req.Recorder), Prefix: "statistical aligner: "}
	opts.Progress = show.Report
	links, err := wordalign.AlignWords(ctx, pairs, opts, GuideSymmetrization)
	show.End()
	if err != nil {
		return nil, stopped(ctx, "aligning the training corpus (train.guided_alignment auto)", fmt.Errorf("train.guided_alignment auto: %w", err))
	}
	return links.Symmetrized(GuideSymmetrization), nil
}

// AlignerProgress shows the statistical aligner's passes over the corpus: Report, a wordalign.Options.Progress,
// starts one phase per pass (a bar on a terminal, plain lines elsewhere) and, when Stats is not nil, writes one
// line of each EM iteration's figures to it, as fast_align prints its iterations. End ends the phase under way.
type AlignerProgress struct {
	Phases PhaseRecorder // nil shows no phases
	Prefix string        // put before each pass's name, e.g. "statistical aligner: "
	Stats  io.Writer     // nil: no iteration lines

	current Phase
	pass    string
}

// Report is a wordalign.Options.Progress.
func (a *AlignerProgress) Report(p wordalign.Progress) {
	name := a.Prefix + p.Pass()
	if a.current == nil || name != a.pass {
		a.End()
		a.current, a.pass = orNoPhases(a.Phases).StartPhase(name, int64(p.Total), "sentence pair"), name
	}
	a.current.Set(int64(p.Done))
	if p.Done == p.Total {
		a.End()
	}
	if s := p.Stats; s != nil && a.Stats != nil {
		fmt.Fprintf(a.Stats, "%s: log-likelihood per word %.4f, empty word %.1f%%, tension %.3f\n", p.Pass(),
			s.LogLikelihood, 100*s.NullShare, s.Tension)
	}
}

// End ends the phase under way, if any.
func (a *AlignerProgress) End() {
	if a.current != nil {
		a.current.End()
		a.current = nil
	}
}

// writeGuide writes lines to path, one Pharaoh line of 0-based links each, atomically (checkpoint.WriteFile),
// and returns the SHA-256 of what it wrote (hex).
func writeGuide(path string, lines [][]align.Link) (string, error) {
	var sum hash.Hash = sha256.New()
	err := checkpoint.WriteFile(path, func(w io.Writer) error {
		bw := bufio.NewWriter(io.MultiWriter(w, sum))
		for _, l := range lines {
			bw.WriteString(align.FormatPharaoh(l, false))
			bw.WriteByte('\n')
		}
		return bw.Flush()
	})
	return hex.EncodeToString(sum.Sum(nil)), err
}

// pairLinks returns the links of each pair that corpus, read with ReadOptions.KeepLines, kept, by its index
// (data.Batch.Index): a file with another number of lines than the corpus, or a link beyond the words of its
// pair, is an error naming the file and the line.
func (g *guideLinks) pairLinks(corpus *data.Corpus) ([][]align.Link, error) {
	if len(corpus.Lines) != corpus.Pairs.Len() {
		panic(fmt.Sprintf("app: a corpus of %d pairs with %d lines: read it with KeepLines", corpus.Pairs.Len(), len(corpus.Lines)))
	}
	var autoHint string
	if g.auto {
		autoHint = fmt.Sprintf(" (the statistical aligner's links of another corpus? remove %s to have it link this one)", g.file)
	}
	if len(g.lines) != corpus.Report.Total {
		return nil, fmt.Errorf("train.guided_alignment: %s has %d lines and the training corpus %d; want one line of links per sentence pair%s",
			g.file, len(g.lines), corpus.Report.Total, autoHint)
	}
	// The pairs dropped (empty sides, longer than data.max_len) are not checked: their links are never read.
	srcLens, tgtLens := make([]int, len(g.lines)), make([]int, len(g.lines))
	for k := range g.lines {
		srcLens[k], tgtLens[k] = math.MaxInt, math.MaxInt
	}
	links := make([][]align.Link, corpus.Pairs.Len())
	for i, line := range corpus.Lines {
		srcLens[line-1], tgtLens[line-1] = corpus.Pairs.Lens(i)
		links[i] = g.lines[line-1]
	}
	if err := align.CheckLengths(g.lines, srcLens, tgtLens, g.file, false); err != nil {
		if g.auto {
			return nil, fmt.Errorf("train.guided_alignment: %w%s", err, autoHint)
		}
		return nil, fmt.Errorf("train.guided_alignment: %w (the links must count the words attend's tokenizer reads, before any subword split, as attend align --statistical writes them)", err)
	}
	return links, nil
}
