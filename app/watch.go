package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// WatchDir is the folder beside the checkpoint path out where a run writes what its watched sentences looked
// like at each validation (train.watch_sentences): NAME.watch for NAME.ckpt.
func WatchDir(out string) string { return strings.TrimSuffix(out, ".ckpt") + ".watch" }

// MetricsPath is the metrics log a run writes beside the checkpoint path out unless told another (--metrics):
// NAME.metrics.jsonl for NAME.ckpt.
func MetricsPath(out string) string { return strings.TrimSuffix(out, ".ckpt") + ".metrics.jsonl" }

// WatchSteps are the steps of the records (STEP.json) in the watch folder dir, in order; none when there is no
// folder.
func WatchSteps(dir string) ([]int, error) {
	files, err := watchFiles(dir, ".json")
	if err != nil {
		return nil, err
	}
	var steps []int
	for step, names := range files {
		if slices.Contains(names, strconv.Itoa(step)+".json") {
			steps = append(steps, step)
		}
	}
	slices.Sort(steps)
	return steps, nil
}

// WatchRecord is what NAME.watch/STEP.json holds: one validation, of the weights after step Step, and the
// watched sentences as the model translated them then. A run keeps the record of every validation.
type WatchRecord struct {
	Step  int `json:"step"`
	Epoch int `json:"epoch"` // the epoch (from 1) that step Step belongs to
	// ValidLoss and ValidPPL are the validation's (null when not finite); ValidBLEU is there with
	// train.valid_bleu, ValidAER with --valid-gold (model.ValidLog.AER).
	ValidLoss *float64        `json:"valid_loss"`
	ValidPPL  *float64        `json:"valid_ppl"`
	ValidBLEU *float64        `json:"valid_bleu,omitempty"`
	ValidAER  *float64        `json:"valid_aer,omitempty"`
	Sentences []WatchSentence `json:"sentences"`
}

// WatchSentence is one watched sentence at one validation: its greedy translation and the attention of it
// (what `attend heatmap` draws of a sentence without a reference: heatmap.Map's "source", "output" ending with
// "</s>" when the attention has that row, "attention" and the validation "line"), with the reference beside it.
type WatchSentence struct {
	heatmap.Map
	// Alignment is, for a model with full-context alignment (model.full_context_alignment), its alignment
	// attention over the same output, of Attention's shape; nil for other models.
	Alignment [][]float32 `json:"alignment,omitempty"`
	// Images name the heat maps drawn of it in the folder: STEP-LINE.png of Attention, then with Alignment
	// STEP-LINE.alignment.png. Only the last validations' pictures are kept (watcher.keep).
	Images []string `json:"images"`
}

// watcher writes, at each validation of a run, the watched sentences' records and pictures into dir and, with
// gold links, scores the attention of the first validation pairs against them.
type watcher struct {
	model   *model.Seq2Seq[float32]
	dir     string
	out     string         // the run's checkpoint, for the maps' titles
	watched []data.Pair    // the watched validation pairs, as read (words), with their lines
	gold    [][]align.Link // links of the first validation pairs (--valid-gold), or nil
	golden  []data.Pair    // those pairs
	decode  DecodeOptions
	keep    int // validations whose pictures are kept
}

// watchSeedStream is the PCG stream, with train.seed, that draws the watched sentence after the first ones.
const watchSeedStream = 0x7761746368

// newWatcher sets up the watching of a run training m with cfg on the validation pairs of valid, as read (one
// a line, empty ones too): the sentences of train.watch_sentences, and the gold links of goldPath (its
// positions from 0) for its first lines. It returns nil when there is nothing to watch.
func newWatcher(cfg model.Config, m *model.Seq2Seq[float32], out string, valid Corpus, pairs []data.Pair, goldPath string) (*watcher, error) {
	w := &watcher{model: m, dir: WatchDir(out), out: out, keep: max(cfg.Train.KeepLast, 1),
		decode: DecodeOptions{MaxLen: cfg.Decode.MaxLen, Batch: cfg.Decode.Batch, Precision: kernels.PrecisionFloat32}}
	var err error
	if w.watched, err = watchedPairs(cfg.Train, pairs, valid); err != nil {
		return nil, err
	}
	if w.gold, err = readGold(goldPath, false); err != nil {
		return nil, err
	}
	if err := checkGold(w.gold, pairs, valid, goldPath, false); err != nil {
		return nil, fmt.Errorf("--valid-gold: %w", err)
	}
	w.golden = pairs[:len(w.gold)]
	if len(w.watched) == 0 && w.gold == nil {
		return nil, nil
	}
	return w, os.MkdirAll(w.dir, 0o755)
}

// watchedPairs picks the pairs that train.watch_sentences names among the validation pairs of valid, one a
// line: a count n is the first n−1 with both sides and one drawn by train.seed from the others; listed lines
// must each have both sides.
func watchedPairs(t model.TrainConfig, pairs []data.Pair, valid Corpus) ([]data.Pair, error) {
	n, lines, err := t.WatchLines()
	if err != nil {
		return nil, err
	}
	var out []data.Pair
	for _, line := range lines {
		if line > len(pairs) || len(pairs[line-1].Src) == 0 || len(pairs[line-1].Tgt) == 0 {
			return nil, fmt.Errorf("train.watch_sentences: line %d of the validation corpus (%s, %d lines) has no sentence pair", line, valid, len(pairs))
		}
		out = append(out, pairs[line-1])
	}
	if n == 0 {
		return out, nil
	}
	var usable []data.Pair
	for _, p := range pairs {
		if len(p.Src) > 0 && len(p.Tgt) > 0 {
			usable = append(usable, p)
		}
	}
	first := min(n-1, len(usable))
	out = usable[:first]
	if rest := usable[first:]; len(rest) > 0 {
		out = append(out, rest[rand.New(rand.NewPCG(t.Seed, watchSeedStream)).IntN(len(rest))])
	}
	return out, nil
}

// validated writes the record and pictures of validation v (model.TrainOptions.Watch) and returns the AER of
// the attention against the gold links (NaN without): each target word linked to the source word it attended
// to most, as `attend align --model` links them, by the alignment attention of a full-context model.
func (w *watcher) validated(v model.ValidLog) (float64, error) {
	ctx := context.Background() // a few sentences: an interruption waits for them
	aer := math.NaN()
	if w.gold != nil {
		srcs, tgts := sides(w.golden)
		forced, err := forceWords(ctx, w.model, nil, srcs, tgts, w.decode.Batch, nil, true)
		if err != nil {
			return aer, err
		}
		links := make([][]align.Link, len(forced))
		for i, tr := range forced {
			links[i] = tr.Links(0)
		}
		scores, _ := writeLinks(io.Discard, links, w.gold, nil)
		aer = scores.AER()
	}
	if len(w.watched) == 0 {
		return aer, nil
	}
	rec := WatchRecord{Step: v.Step, Epoch: v.Epoch, ValidLoss: finiteOrNil(v.Loss), ValidPPL: finiteOrNil(v.PPL),
		ValidBLEU: finiteOrNil(v.BLEU), ValidAER: finiteOrNil(aer)}
	if err := w.translate(ctx, &rec); err != nil {
		return aer, err
	}
	for _, s := range rec.Sentences {
		maps := []*heatmap.Map{&s.Map}
		if s.Alignment != nil {
			alignment := s.Map
			alignment.Weights = s.Alignment
			maps = append(maps, &alignment)
		}
		for k, m := range maps {
			if err := checkpoint.WriteFile(filepath.Join(w.dir, s.Images[k]), func(f io.Writer) error { return heatmap.WritePNG(f, m) }); err != nil {
				return aer, fmt.Errorf("train.watch_sentences: %w", err)
			}
		}
	}
	err := checkpoint.WriteFile(filepath.Join(w.dir, strconv.Itoa(v.Step)+".json"), func(f io.Writer) error { return json.NewEncoder(f).Encode(rec) })
	if err != nil {
		return aer, fmt.Errorf("train.watch_sentences: %w", err)
	}
	return aer, w.prune()
}

// translate fills rec.Sentences: the watched sentences translated greedily (and, for a full-context model,
// once more for the alignment attention of the same output), as `attend heatmap` translates them.
func (w *watcher) translate(ctx context.Context, rec *WatchRecord) error {
	srcs, refs := sides(w.watched)
	trs, err := TranslateWords(ctx, w.model, nil, srcs, w.decode)
	if err != nil {
		return err
	}
	var aligned []Translation
	if w.model.HasAlignment() {
		opts := w.decode
		opts.Alignment = true
		if aligned, err = TranslateWords(ctx, w.model, nil, srcs, opts); err != nil {
			return err
		}
	}
	id := heatmap.Model{Checkpoint: w.out, Step: rec.Step, Description: w.model.Describe()}
	for i, tr := range trs {
		s := WatchSentence{Map: *AttentionMap(tr, refs[i], false, id)}
		s.Line = w.watched[i].Line
		name := fmt.Sprintf("%d-%d", rec.Step, s.Line)
		s.Images = []string{name + ".png"}
		if aligned != nil {
			s.Alignment = aligned[i].Attention
			s.Images = append(s.Images, name+".alignment.png")
		}
		rec.Sentences = append(rec.Sentences, s)
	}
	return nil
}

// prune removes the pictures of all but the last w.keep validations.
func (w *watcher) prune() error {
	steps, err := watchFiles(w.dir, ".png")
	if err != nil {
		return err
	}
	var errs []error
	for _, step := range slices.Sorted(maps.Keys(steps))[:max(len(steps)-w.keep, 0)] {
		for _, name := range steps[step] {
			if err := os.Remove(filepath.Join(w.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// watchFiles lists the files of dir whose names end in ext and start with a step and "." or "-", by step.
func watchFiles(dir, ext string) (map[int][]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("train.watch_sentences: %w", err)
	}
	steps := map[int][]string{}
	for _, e := range entries {
		name := e.Name()
		end := strings.IndexAny(name, ".-")
		step, err := strconv.Atoi(name[:max(end, 0)])
		if err == nil && step >= 0 && strings.HasSuffix(name, ext) && e.Type().IsRegular() {
			steps[step] = append(steps[step], name)
		}
	}
	return steps, nil
}

// removeWatched removes, from the watch folder of the run at out, the records and pictures of the steps after
// step (-1: all of them), and says how many records went: a run resumed from step goes through those steps
// again, and one that replaces another (--overwrite) starts a history of its own.
func removeWatched(stdout io.Writer, out string, step int) error {
	dir := WatchDir(out)
	var errs []error
	for _, ext := range []string{".png", ".json"} {
		files, err := watchFiles(dir, ext)
		if err != nil {
			return err
		}
		removed := 0
		for s, names := range files {
			for _, name := range names {
				if s <= step {
					break
				}
				if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, err)
				}
				removed++
			}
		}
		if ext == ".json" && removed > 0 {
			fmt.Fprintf(stdout, "removed %s of steps after %d from %s\n", plural.Count(removed, "watch record"), step, dir)
		}
	}
	return errors.Join(errs...)
}

// watchOutputs are the files of the watch folder of the run at out, for CheckOutputs: the records, the
// pictures and their temporaries; another says they would be another run's, which are kept (NamedPath.Keep).
func watchOutputs(out string, another bool) []NamedPath {
	dir := WatchDir(out) + string(filepath.Separator)
	keep := ""
	if another {
		keep = "shows how another run learned, which this one would replace; `--resume` that run to continue it, `--overwrite` to replace it (or give another --out)"
	}
	return []NamedPath{{Role: "the watched sentences' records (train.watch_sentences)", Path: GlobOf(dir, ".json"), Pattern: true, Replaceable: true, Own: ownWatchFile, Keep: keep},
		{Role: "the watched sentences' heat maps", Path: GlobOf(dir, ".png"), Pattern: true, Replaceable: true, Own: ownWatchFile, Keep: keep},
		{Role: "the temporary files of the watched sentences", Path: GlobOf(dir+".", ""), Pattern: true}}
}

// ownWatchFile is a NamedPath.Own for the files of a watch folder: a record (WatchRecord's JSON, which starts
// with its step) or a PNG.
func ownWatchFile(path string) error {
	return judgeHead(path, 8, func(head []byte) error {
		if bytes.HasPrefix(head, []byte(`{"step":`)) || bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")) {
			return nil
		}
		return fmt.Errorf("is neither a record of attend's watched sentences nor a PNG (it starts with %q)", firstLine(head, 24))
	})
}

// finiteOrNil is x, or nil when JSON cannot hold it (NaN, ±Inf).
func finiteOrNil(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
