package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// decodeFlags are the search settings `translate`, `eval` and `heatmap` share.
type decodeFlags struct {
	maxLen, batch int // 0: the checkpoint's decode.max_len and decode.batch
	beam, nBest   int
	alpha, beta   float64 // alpha: the checkpoint's decode.alpha unless --alpha is given
	maxLenRatio   float64
	replaceUnk    bool
	shortlist     string // "FREQUENT,BEST", or "" for the whole vocabulary
	bf16          bool
	threads       int // 0: every core
}

// defaultBeam is the beam width of translate, eval and heatmap.
const defaultBeam = 5

// register adds the search flags and --n-best.
func (d *decodeFlags) register(fl *pflag.FlagSet) {
	d.registerSearch(fl)
	fl.IntVar(&d.nBest, "n-best", 0, "write the N best translations of each sentence with their scores (N ≤ --beam)")
}

// registerSearch adds the flags that choose the translation: all but --n-best.
func (d *decodeFlags) registerSearch(fl *pflag.FlagSet) {
	fl.IntVar(&d.maxLen, "max-len", 0, "longest translation in tokens (default: the checkpoint's decode.max_len)")
	fl.Float64Var(&d.maxLenRatio, "max-len-ratio", 0, "also at most this many times the source length in tokens (0: no such limit)")
	fl.IntVar(&d.batch, "batch", 0, "sentences per batch (default: the checkpoint's decode.batch)")
	fl.IntVar(&d.beam, "beam", defaultBeam, "beam width; 1 is greedy search (at most the model's target vocabulary: a wider beam is cut to it)")
	fl.Float64Var(&d.alpha, "alpha", 0, "GNMT length penalty: rank by log p / ((5+|Y|)/6)^alpha (0: plain log p; default: the checkpoint's decode.alpha)")
	fl.Float64Var(&d.beta, "beta", 0, "GNMT coverage penalty weight: add beta·Σ log min(attention to each source word, 1)")
	fl.BoolVar(&d.replaceUnk, "replace-unk", false, "replace each <unk> by the source word it attended to most")
	fl.BoolVar(&d.bf16, "bf16", true, "greedy search on CPUs with AVX512-BF16: score the vocabulary with bfloat16 products and rescore the near-best words in float64, which picks float64's best word (false: float32 products)")
	fl.IntVar(&d.threads, "threads", 0, "CPU threads (default: every core)")
	fl.StringVar(&d.shortlist, "shortlist", "", fmt.Sprintf("score only a lexical shortlist: F,K = the F most frequent target words and the K likeliest translations of each source word, of the %d the lexicon keeps (K at most that; e.g. 100,20)", lexicon.DefaultOptions().Keep))
}

// parseShortlist reads --shortlist F,K.
func parseShortlist(v string) (*lexicon.ShortlistSize, error) {
	if v == "" {
		return nil, nil
	}
	f, k, ok := strings.Cut(v, ",")
	frequent, err1 := strconv.Atoi(strings.TrimSpace(f))
	best, err2 := strconv.Atoi(strings.TrimSpace(k))
	if !ok || err1 != nil || err2 != nil || frequent < 0 || best < 0 || frequent == 0 && best == 0 {
		return nil, fmt.Errorf("--shortlist is %q; want F,K: the number of most frequent target words and of translations per source word, e.g. 100,20", v)
	}
	return &lexicon.ShortlistSize{Frequent: frequent, Best: best}, nil
}

// modelFlagHelp is the help of --model in the commands that translate with an ensemble when it is repeated.
const modelFlagHelp = "checkpoint to translate with (required); repeat it to translate with an ensemble of the models, which must read and write the same vocabularies (the first model's attention is reported)"

// loadModels loads the checkpoints of --model: one, or several to translate with as an ensemble, which
// model.NewEnsemble refuses when two of them read or write different text. It returns the first checkpoint,
// whose vocabularies, tokenizer, decode settings and attention are the translation's, and the ensemble of all
// of them, nil for one.
func loadModels(paths []string) (*model.Checkpoint, *model.Ensemble, error) {
	var cks []*model.Checkpoint
	for _, path := range paths {
		ck, err := model.Load(path)
		if err != nil {
			return nil, nil, err
		}
		cks = append(cks, ck)
	}
	if len(cks) == 1 {
		return cks[0], nil, nil
	}
	ens, err := model.NewEnsemble(paths, cks)
	if err != nil {
		return nil, nil, err
	}
	return cks[0], ens, nil
}

// modelInputs names the checkpoints of --model for app.CheckOutputs.
func modelInputs(paths []string) []app.NamedPath {
	var in []app.NamedPath
	for _, p := range paths {
		in = append(in, app.NamedPath{Role: "--model", Path: p})
	}
	return in
}

// options checks the flags against the checkpoint loaded from path and fills in its defaults; ens, when not
// nil, is the ensemble that translates (ck being its first model). It also holds the process to --threads
// (app.UseThreads).
func (d *decodeFlags) options(cmd *cobra.Command, path string, ck *model.Checkpoint, ens *model.Ensemble) (app.DecodeOptions, error) {
	cfg := ck.Config
	fl := cmd.Flags()
	if d.threads < 0 {
		return app.DecodeOptions{}, fmt.Errorf("--threads is %d; want 0 (every core) or more", d.threads)
	}
	if fl.Changed("max-len") && d.maxLen < 1 {
		return app.DecodeOptions{}, fmt.Errorf("--max-len is %d; want at least 1", d.maxLen)
	}
	if fl.Changed("batch") && d.batch < 1 {
		return app.DecodeOptions{}, fmt.Errorf("--batch is %d; want at least 1", d.batch)
	}
	if d.beam < 1 {
		return app.DecodeOptions{}, fmt.Errorf("--beam is %d; want at least 1", d.beam)
	}
	if fl.Changed("n-best") && (d.nBest < 1 || d.nBest > d.beam) {
		return app.DecodeOptions{}, fmt.Errorf("--n-best is %d; want 1 to --beam (%d)", d.nBest, d.beam)
	}
	// The penalties' weights, as the config's decode.alpha: an infinite or NaN weight makes every score -Inf,
	// NaN or 0, and a negative one rewards what the penalty is there to punish.
	for _, p := range []struct {
		flag, what string
		value      float64
	}{{"alpha", "0: no length penalty", d.alpha}, {"beta", "0: no coverage penalty", d.beta}} {
		if v := p.value; fl.Changed(p.flag) && (!(v >= 0) || math.IsInf(v, 1)) {
			return app.DecodeOptions{}, fmt.Errorf("--%s is %g; want a finite number, at least 0 (%s)", p.flag, v, p.what)
		}
	}
	// A beam wider than the target vocabulary keeps no more distinct first words than there are words, and
	// costs beam × batch rows of the vocabulary's width in memory: it is cut to the vocabulary.
	if v := ck.Model.TgtVocab.Size(); d.beam > v {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: --beam %d is more than the model's %d target words; using --beam %d\n", d.beam, v, v)
		d.beam = v
		if d.nBest > v {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: --n-best %d is more than --beam %d; using --n-best %d\n", d.nBest, v, v)
			d.nBest = v
		}
	}
	short, err := parseShortlist(d.shortlist)
	if err != nil {
		return app.DecodeOptions{}, err
	}
	if keep := lexicon.DefaultOptions().Keep; short != nil && short.Best > keep {
		return app.DecodeOptions{}, fmt.Errorf("--shortlist is %q: K is %d, but the lexicon keeps at most %d translations of each source word; want K from 0 to %d",
			d.shortlist, short.Best, keep, keep)
	}
	if short != nil && ens != nil {
		return app.DecodeOptions{}, fmt.Errorf("--shortlist with %d models: a shortlist scores a few words of one model's output layer, where an ensemble averages every model's log-probabilities over the whole vocabulary; give one --model, or drop --shortlist",
			len(ens.Models))
	}
	if short != nil && ck.Model.Lexicon == nil {
		return app.DecodeOptions{}, fmt.Errorf("--shortlist: %s has no lexicon (it was saved before training had learned one, or trained before attend learned them); add one with: attend lexicon --model %s --src SRC --tgt TGT", path, path)
	}
	o := app.DecodeOptions{MaxLen: cfg.Decode.MaxLen, Batch: cfg.Decode.Batch, Beam: d.beam, NBest: d.nBest,
		Alpha: cfg.Decode.Alpha, Beta: d.beta, MaxLenRatio: d.maxLenRatio, ReplaceUnk: d.replaceUnk, Shortlist: short,
		NoBF16: !d.bf16, Ensemble: ens}
	if d.maxLen > 0 {
		o.MaxLen = d.maxLen
	}
	if d.batch > 0 {
		o.Batch = d.batch
	}
	if fl.Changed("alpha") {
		o.Alpha = d.alpha
	}
	if err := o.Validate(); err != nil {
		return app.DecodeOptions{}, err
	}
	app.UseThreads(cmd.ErrOrStderr(), d.threads, "--threads")
	return o, nil
}
