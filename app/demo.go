package app

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/metrics"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// DemoConfig is the built-in configuration of `attend demo` (configs/demo.yaml holds the same values): a small
// model that learns the synthetic language pair in a couple of minutes on two cores.
func DemoConfig() model.Config {
	cfg := model.Default()
	m := &cfg.Model // Default's, the Transformer's keys included
	m.Emb, m.EncHidden, m.DecHidden, m.AttnDim, m.Dropout = 32, 64, 128, 64, 0.1
	cfg.Data = model.DataConfig{Lowercase: true, MinFreq: 1, MaxLen: 30, Batch: 32, BucketChunk: 100, RoundLen: 2, Subword: model.SubwordNone}
	cfg.Train = model.TrainConfig{Epochs: 6, LR: 3e-3, Clip: 1, Seed: 1, LogEvery: 50, SaveEvery: 500, Threads: 2, GraphCache: 16, MaxBadSteps: 10, BestMetric: "ppl",
		GuidedAlignmentWeight: 0.1, Precision: kernels.PrecisionAuto, SplitVocabulary: true, WatchSentences: "4"}
	cfg.Decode = model.DecodeConfig{MaxLen: 30, Batch: 64}
	return cfg
}

// DemoRequest is everything `attend demo` needs.
type DemoRequest struct {
	Config             model.Config
	Dir                string // where the corpus, checkpoints and outputs go
	Train, Valid, Test int    // corpus sizes
	Stdout             io.Writer
	Recorder           model.Recorder // progress display; nil for none
}

// DemoResult is what the demo measured on the held-out test set.
type DemoResult struct {
	ExactMatch float64 // fraction of test sentences translated exactly
	AER        float64 // alignment error rate of the attention's argmax against the generator's gold alignment
	// AlignedSentences is how many test sentences the AER covers: those translated exactly.
	AlignedSentences int
	Seconds          float64 // training time
}

// Demo generates the synthetic corpus, trains on it, translates the held-out test set and reports exact-match
// accuracy and how well the attention found the gold alignment (AER of the argmax links, on the sentences
// translated exactly); it draws heatmap.png and a gallery (heatmaps/) of test sentences in req.Dir.
func Demo(ctx context.Context, req DemoRequest) (DemoResult, error) {
	var res DemoResult
	train, valid, test := synth.Split(req.Train, req.Valid, req.Test, req.Config.Train.Seed)
	if err := synth.WriteFiles(req.Dir, train, valid, test); err != nil {
		return res, err
	}
	fmt.Fprintf(req.Stdout, "demo corpus: %d train, %d valid, %d test pairs in %s\n", len(train), len(valid), len(test), req.Dir)
	for _, p := range train[:3] {
		fmt.Fprintf(req.Stdout, "  %s  →  %s\n", p.Src, p.Tgt)
	}
	out := filepath.Join(req.Dir, "demo.ckpt")
	start := time.Now()
	// The demo owns its directory: a second run replaces the first's corpus, checkpoints and pictures.
	_, err := Train(ctx, TrainRequest{Config: req.Config, Out: out, Stdout: req.Stdout, Recorder: req.Recorder, Overwrite: true,
		Train: Corpus{Src: filepath.Join(req.Dir, "train.src"), Tgt: filepath.Join(req.Dir, "train.tgt")},
		Valid: Corpus{Src: filepath.Join(req.Dir, "valid.src"), Tgt: filepath.Join(req.Dir, "valid.tgt")}, ValidGold: filepath.Join(req.Dir, "valid.align")})
	if err != nil {
		return res, err
	}
	res.Seconds = time.Since(start).Seconds()
	ck, err := model.Load(model.BestPath(out))
	if err != nil {
		return res, err
	}
	srcs := make([][]string, len(test))
	refs := make([][]string, len(test))
	for i, p := range test {
		srcs[i], refs[i] = strings.Fields(p.Src), strings.Fields(p.Tgt)
	}
	phase := phasesOf(req.Recorder).StartPhase("translating the test set", int64(len(srcs)), "sentence")
	trs, err := TranslateTokens(ctx, ck.Model, srcs, DecodeOptions{MaxLen: req.Config.Decode.MaxLen, Batch: req.Config.Decode.Batch,
		Progress: phase})
	phase.End()
	if err != nil {
		return res, fmt.Errorf("interrupted while translating the test set (the trained model is in %s): %w", model.BestPath(out), ErrStopped)
	}
	hyps := make([][]string, len(trs))
	var scores align.Scores
	for i, tr := range trs {
		hyps[i] = tr.Output
		if strings.Join(tr.Output, " ") == test[i].Tgt {
			// Alignment quality is only comparable where the output is the reference.
			scores.Add(tr.Links(0), goldLinks(test[i].Alignment))
			res.AlignedSentences++
		}
	}
	res.ExactMatch = metrics.ExactMatch(hyps, refs)
	res.AER = scores.AER()
	if err := demoHeatmaps(req, ck, model.BestPath(out), trs, refs); err != nil {
		return res, err
	}
	for i := 0; i < min(3, len(test)); i++ {
		fmt.Fprintf(req.Stdout, "  test: %s\n   ref: %s\n   out: %s\n", test[i].Src, test[i].Tgt, strings.Join(hyps[i], " "))
	}
	fmt.Fprintf(req.Stdout, "demo: held-out exact match %.2f%% (%s), attention AER %.3f (precision %.3f, recall %.3f, on the %s), trained in %.0fs\n",
		100*res.ExactMatch, plural.Count(len(test), "sentence"), res.AER, scores.Precision(), scores.Recall(), plural.Count(res.AlignedSentences, "exact translation"), res.Seconds)
	return res, nil
}

// demoGallerySize is how many test sentences the demo's gallery shows.
const demoGallerySize = 12

// demoHeatmaps draws heatmap.png, the attention of the first test sentence of at least six words that was
// translated exactly (the reordering shows), and a gallery of the first test sentences in heatmaps/.
func demoHeatmaps(req DemoRequest, ck *model.Checkpoint, ckPath string, trs []Translation, refs [][]string) error {
	id := ModelIdentity(ckPath, ck)
	for i, tr := range trs {
		if len(tr.Output) >= 6 && strings.Join(tr.Output, " ") == strings.Join(refs[i], " ") {
			path := filepath.Join(req.Dir, "heatmap.png")
			if err := heatmap.WriteFile(path, AttentionMap(tr, refs[i], false, id)); err != nil {
				return err
			}
			fmt.Fprintf(req.Stdout, "attention of test sentence %d: %s\n", i+1, path)
			break
		}
	}
	maps := make([]*heatmap.Map, 0, demoGallerySize)
	for i, tr := range trs[:min(demoGallerySize, len(trs))] {
		if len(tr.Source) > 0 && len(tr.Attention) > 0 {
			maps = append(maps, AttentionMap(tr, refs[i], false, id))
		}
	}
	dir := filepath.Join(req.Dir, "heatmaps")
	if err := heatmap.WriteGalleryDir(dir, "attend demo: attention on the test set", maps, nil); err != nil {
		return err
	}
	fmt.Fprintf(req.Stdout, "gallery of %s: %s\n", plural.Count(len(maps), "test sentence"), filepath.Join(dir, "index.html"))
	return nil
}

// goldLinks turns the generator's (source, target) pairs into sure links.
func goldLinks(pairs [][2]int) []align.Link {
	links := make([]align.Link, len(pairs))
	for i, p := range pairs {
		links[i] = align.Link{Src: p[0], Tgt: p[1]}
	}
	return links
}
