package app

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/metrics"
	"github.com/attend-nmt/attend/model"
)

// The metrics EvalRequest.Metrics may name.
const (
	MetricBLEU = "bleu"
	MetricChrF = "chrf"
)

// NamedReader is an input stream with the name its errors use (a path, or "stdin").
type NamedReader struct {
	R    io.Reader
	Name string
}

// EvalRequest is everything `attend eval` needs: one or more systems' hypotheses to score against references,
// or a model and a source file to translate first.
type EvalRequest struct {
	// Refs are the references, one file per set of references and one line per sentence (at least one). With
	// several, each sentence is scored against all of its references, as sacreBLEU scores several: BLEU clips
	// each n-gram's matches to the most any one reference has and takes the reference length closest to the
	// hypothesis', chrF takes the reference with the best sentence score (see metrics.SentenceBLEUCounts and
	// metrics.SentenceChrFCounts). The perplexity is that of the first.
	Refs []NamedReader
	// Hyps are the systems' hypotheses, one file per system and one line per sentence. Empty: translate Src with
	// Model. With several, the first is the baseline of the paired tests.
	Hyps []NamedReader

	Model     *model.Seq2Seq[float32]
	Lowercase bool // the model was trained on lowercased text (the checkpoint's data.lowercase)
	Src       NamedReader
	Decode    DecodeOptions
	// Output, when not nil, receives the model's translations, one per line, detokenized as they are scored,
	// or with Decode.NBest > 0 the n-best list of each sentence as translate writes it.
	Output io.Writer

	// TokLC scores BLEU on attend's lowercased regex tokens without smoothing (the figure training logs report) instead of
	// sacreBLEU's default (13a tokens, mixed case, exp smoothing). "<unk>" counts as one token.
	TokLC      bool
	Metrics    []string // MetricBLEU and/or MetricChrF; empty: both
	Perplexity bool     // also the references' perplexity under Model (teacher forcing)
	// LengthLimit leaves out of the perplexity the pairs with a side longer than this many tokens (0: none; see
	// LengthLimit), each named in a warning to Warn.
	LengthLimit int
	// Warn (nil: nowhere) receives warnings: pairs left out of the perplexity, and hypotheses whose case or
	// tokenization differs from the references' (see StyleWarnings).
	Warn    io.Writer
	Version string // attend's version, for the signatures

	// Confidence adds to each score its mean and 95% interval over Resamples bootstrap resamples of the test set.
	Confidence bool
	// Paired tests every system after the first against the first: by paired bootstrap resampling over the
	// same Resamples resamples (PairedBootstrap), or by approximate randomization over Trials trials
	// (PairedRandomization); either gives every system its interval, as Confidence does. "" tests nothing.
	// A test needs two Hyps or more.
	Paired string
	// Resamples is the number of bootstrap resamples (0: 1,000, sacreBLEU's default); Trials the number of
	// approximate randomization trials (0: 10,000, sacreBLEU's default); at most MaxResamples and MaxTrials.
	// Seed seeds both.
	Resamples, Trials int
	Seed              uint64
}

// The paired tests EvalRequest.Paired may name, as sacreBLEU's --paired-bs and --paired-ar.
const (
	PairedBootstrap     = "bs"
	PairedRandomization = "ar"
)

// DefaultTrials is the number of approximate randomization trials when EvalRequest.Trials is 0, as in sacreBLEU.
const DefaultTrials = 10000

// DefaultResamples is the number of bootstrap resamples when EvalRequest.Resamples is 0, as in sacreBLEU.
const DefaultResamples = 1000

// MaxResamples and MaxTrials bound EvalRequest.Resamples and Trials, at a hundred times the defaults: each
// resample keeps a score per system and metric (a billion of them took 8 GB each), and each resample or trial
// costs a pass over the test set, so a figure much beyond these adds minutes and no precision.
const (
	MaxResamples = 100 * DefaultResamples
	MaxTrials    = 100 * DefaultTrials
)

// EvalResult holds the scores Eval computed.
type EvalResult struct {
	Sentences int
	// Systems are the scored systems in the order of EvalRequest.Hyps (one, the model's, when it translated).
	Systems       []SystemScores
	BLEUSignature string // "" when BLEU was not asked for
	ChrFSignature string // "" when chrF was not asked for
	// Perplexity is exp of the token-averaged cross-entropy of the references (with </s>) given their sources
	// (tokens are the model's: subwords for a model trained on subwords),
	// over PerplexityTokens target tokens; pairs with an empty side are left out.
	Perplexity       float64
	PerplexityTokens int
	Paired           string // the paired test of Systems[1:], as EvalRequest.Paired
}

// SystemScores are one system's scores: a nil pointer is a figure that was not asked for.
type SystemScores struct {
	Name string // the hypotheses' file
	BLEU *metrics.BLEUScore
	ChrF *metrics.ChrFScore
	// The bootstrap estimates, with EvalRequest.Confidence or Paired.
	BLEUInterval, ChrFInterval *metrics.Interval
	// The paired tests against the first system, with EvalRequest.Paired, for every system but the first.
	BLEUTest, ChrFTest *metrics.PairedTest
}

// Report prints the result as sacreBLEU's text format does. For one system that is one score per line:
// "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-… = 34.76 65.2/… (BP = …)", with
// " (μ = 34.76 ± 1.55)" after the score when it has an interval. Several systems make a table, one row per
// system with each score, its interval and its p-value against the baseline, and the signatures below it.
func (r EvalResult) Report(w io.Writer) {
	switch {
	case len(r.Systems) > 1:
		r.reportTable(w)
	case len(r.Systems) == 1:
		s := r.Systems[0]
		if s.BLEU != nil {
			score, rest, _ := strings.Cut(strings.TrimPrefix(s.BLEU.String(), "BLEU = "), " ")
			fmt.Fprintf(w, "BLEU|%s = %s%s %s\n", r.BLEUSignature, score, intervalText(s.BLEUInterval), rest)
		}
		if s.ChrF != nil {
			fmt.Fprintf(w, "chrF2|%s = %.2f%s\n", r.ChrFSignature, s.ChrF.Score, intervalText(s.ChrFInterval))
		}
	}
	if r.PerplexityTokens > 0 {
		fmt.Fprintf(w, "perplexity = %.3f (%s)\n", r.Perplexity, plural.Count(r.PerplexityTokens, "reference token"))
	}
}

// WriteJSON writes the result as sacreBLEU's --format json does: for one system, one object per score (a list
// of them when there are several), with "name", "score" (rounded to 2 decimals), "signature",
// "confidence_mean", "confidence_var" and "confidence" with an interval, "verbose_score" for BLEU, then each
// field of the signature as a string:
//
//	{
//	 "name": "BLEU",
//	 "score": 34.76,
//	 "signature": "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-…",
//	 "verbose_score": "65.2/41.0/27.2/18.5 (BP = 0.959 ratio = 0.960 hyp_len = 12554 ref_len = 13080)",
//	 "nrefs": "1",
//	 …
//	}
//
// sacreBLEU writes JSON for one system only; with several, each object also has "system" (the file) first,
// the first system "baseline": true under a paired test, and each other "p_value" (and "wins", by paired
// bootstrap). The perplexity is an object of its own: "name": "perplexity", "score", "tokens".
func (r EvalResult) WriteJSON(w io.Writer) error {
	var objects []jsonObject
	for i, s := range r.Systems {
		var system jsonObject
		if len(r.Systems) > 1 {
			system.add("system", s.Name)
		}
		paired := len(r.Systems) > 1 && (r.Systems[1].BLEUTest != nil || r.Systems[1].ChrFTest != nil)
		if s.BLEU != nil {
			verbose := strings.TrimPrefix(s.BLEU.String(), fmt.Sprintf("BLEU = %.2f ", s.BLEU.Score))
			objects = append(objects, scoreJSON(system, "BLEU", s.BLEU.Score, r.BLEUSignature, s.BLEUInterval, verbose, i == 0 && paired, s.BLEUTest))
		}
		if s.ChrF != nil {
			objects = append(objects, scoreJSON(system, "chrF2", s.ChrF.Score, r.ChrFSignature, s.ChrFInterval, "", i == 0 && paired, s.ChrFTest))
		}
	}
	if r.PerplexityTokens > 0 {
		var o jsonObject
		o.add("name", "perplexity")
		o.add("score", math.Round(r.Perplexity*1000)/1000)
		o.add("tokens", r.PerplexityTokens)
		objects = append(objects, o)
	}
	var b strings.Builder
	switch len(objects) {
	case 0:
		b.WriteString("[]")
	case 1:
		objects[0].write(&b)
	default:
		b.WriteString("[\n")
		for i, o := range objects {
			if i > 0 {
				b.WriteString(",\n")
			}
			o.write(&b)
		}
		b.WriteString("\n]")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// scoreJSON is one score's object: the system's fields, then sacreBLEU's.
func scoreJSON(system jsonObject, name string, score float64, signature string, iv *metrics.Interval, verbose string, baseline bool, test *metrics.PairedTest) jsonObject {
	o := jsonObject{keys: slices.Clone(system.keys), values: slices.Clone(system.values)}
	o.add("name", name)
	o.add("score", math.Round(score*100)/100)
	o.add("signature", signature)
	if iv != nil {
		o.add("confidence_mean", math.Round(iv.Mean*100)/100)
		o.add("confidence_var", math.Round(iv.HalfWidth*100)/100)
		o.add("confidence", fmt.Sprintf("μ = %.2f ± %.2f", iv.Mean, iv.HalfWidth))
	}
	if verbose != "" {
		o.add("verbose_score", verbose)
	}
	if baseline {
		o.add("baseline", true)
	}
	if test != nil {
		o.add("p_value", test.P)
		if !math.IsNaN(test.Wins) {
			o.add("wins", test.Wins)
		}
	}
	for _, field := range strings.Split(signature, "|") {
		if k, v, ok := strings.Cut(field, ":"); ok {
			o.add(k, v)
		}
	}
	return o
}

// jsonObject is a JSON object whose keys keep their order, written as Python's json.dumps(indent=1) writes one.
type jsonObject struct {
	keys   []string
	values []any
}

func (o *jsonObject) add(key string, value any) {
	o.keys, o.values = append(o.keys, key), append(o.values, value)
}

func (o jsonObject) write(b *strings.Builder) {
	b.WriteString("{")
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n ")
		b.WriteString(jsonValue(k))
		b.WriteString(": ")
		b.WriteString(jsonValue(o.values[i]))
	}
	b.WriteString("\n}")
}

// jsonValue is v in JSON, with <, > and & as they are (sacreBLEU's ensure_ascii=False writes them so too).
func jsonValue(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // strings, numbers and booleans always encode
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// reportTable prints several systems' scores as a table, then the signatures.
func (r EvalResult) reportTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := "system"
	if r.BLEUSignature != "" {
		header += "\tBLEU"
	}
	if r.ChrFSignature != "" {
		header += "\tchrF2"
	}
	fmt.Fprintln(tw, header)
	paired := r.Systems[1].BLEUTest != nil || r.Systems[1].ChrFTest != nil
	for i, s := range r.Systems {
		row, tests := s.Name, ""
		if i == 0 && paired {
			row = "baseline: " + row
		}
		if s.BLEU != nil {
			row += fmt.Sprintf("\t%.2f%s", s.BLEU.Score, intervalText(s.BLEUInterval))
			tests += "\t" + testText(s.BLEUTest)
		}
		if s.ChrF != nil {
			row += fmt.Sprintf("\t%.2f%s", s.ChrF.Score, intervalText(s.ChrFInterval))
			tests += "\t" + testText(s.ChrFTest)
		}
		fmt.Fprintln(tw, row)
		if s.BLEUTest != nil || s.ChrFTest != nil {
			fmt.Fprintln(tw, tests)
		}
	}
	tw.Flush()
	if paired {
		legend := "p: the chance of a difference from the baseline at least this large if the two were equally good (* below 0.05)"
		if r.Paired == PairedBootstrap {
			legend += "; wins: the share of resamples on which the system scores higher"
		} else {
			legend += ", by approximate randomization"
		}
		fmt.Fprintln(w, legend)
	}
	if r.BLEUSignature != "" {
		fmt.Fprintf(w, "BLEU|%s\n", r.BLEUSignature)
	}
	if r.ChrFSignature != "" {
		fmt.Fprintf(w, "chrF2|%s\n", r.ChrFSignature)
	}
}

// intervalText is " (μ = 34.76 ± 1.55)", or "" for no interval.
func intervalText(iv *metrics.Interval) string {
	if iv == nil {
		return ""
	}
	return fmt.Sprintf(" (μ = %.2f ± %.2f)", iv.Mean, iv.HalfWidth)
}

// testText is "(p = 0.0230*, wins 2.1%)", or "" for no test.
func testText(t *metrics.PairedTest) string {
	if t == nil {
		return ""
	}
	star := ""
	if t.P < 0.05 {
		star = "*"
	}
	if math.IsNaN(t.Wins) {
		return fmt.Sprintf("(p = %.4f%s)", t.P, star)
	}
	return fmt.Sprintf("(p = %.4f%s, wins %.1f%%)", t.P, star, 100*t.Wins)
}

// Eval scores hypotheses against references. With req.Hyps empty it first translates req.Src with req.Model.
// Files must have the same number of lines; the error says both counts. Invalid UTF-8 names the file and line.
func Eval(ctx context.Context, req EvalRequest) (EvalResult, error) {
	var res EvalResult
	wantBLEU, wantChrF, err := parseMetrics(req.Metrics)
	if err != nil {
		return res, err
	}
	switch {
	case req.Paired != "" && req.Paired != PairedBootstrap && req.Paired != PairedRandomization:
		return res, fmt.Errorf("eval: unknown paired test %q (want %s or %s)", req.Paired, PairedBootstrap, PairedRandomization)
	case req.Paired != "" && len(req.Hyps) < 2:
		return res, fmt.Errorf("eval: a paired test needs two systems' hypotheses or more (the first is the baseline)")
	case req.Resamples < 0 || req.Resamples > MaxResamples:
		return res, fmt.Errorf("eval: %d bootstrap resamples; want 1 to %d (0: %d)", req.Resamples, MaxResamples, DefaultResamples)
	case req.Trials < 0 || req.Trials > MaxTrials:
		return res, fmt.Errorf("eval: %d randomization trials; want 1 to %d (0: %d)", req.Trials, MaxTrials, DefaultTrials)
	}
	if len(req.Refs) == 0 {
		return res, fmt.Errorf("eval: no references")
	}
	refName := req.Refs[0].Name
	refSets := make([][]string, len(req.Refs)) // refSets[k][i]: reference k of sentence i
	refNames := make([]string, len(req.Refs))
	for k, r := range req.Refs {
		refNames[k] = r.Name
		want := -1 // any number of lines: the first reference's
		if k > 0 {
			want = len(refSets[0])
		}
		if refSets[k], err = readAllLines(r, want, refName); err != nil {
			return res, err
		}
	}
	refs := refSets[0]
	var systems [][]string
	for _, h := range req.Hyps {
		hyps, err := readAllLines(h, len(refs), refName)
		if err != nil {
			return res, err
		}
		systems = append(systems, hyps)
		res.Systems = append(res.Systems, SystemScores{Name: h.Name})
	}
	var srcs []string
	if len(req.Hyps) == 0 || req.Perplexity {
		if req.Model == nil || req.Src.R == nil {
			return res, fmt.Errorf("eval: translating or --perplexity needs a model and a source file")
		}
		if srcs, err = readAllLines(req.Src, len(refs), refName); err != nil {
			return res, err
		}
	}
	var tok data.Tokenizer
	if req.Model != nil {
		tok = Tokenizer(req.Model, req.Lowercase)
	}
	if len(req.Hyps) == 0 {
		hyps, err := translateForEval(ctx, req, tok, srcs)
		if err != nil {
			return res, err
		}
		systems = append(systems, hyps)
		res.Systems = append(res.Systems, SystemScores{Name: req.Src.Name})
	}
	res.Sentences, res.Paired = len(refs), req.Paired
	if req.Warn != nil {
		for k, hyps := range systems {
			for _, w := range StyleWarnings(res.Systems[k].Name, hyps, refNames, refSets, req.TokLC, wantChrF) {
				fmt.Fprintln(req.Warn, "warning:", w)
			}
		}
	}
	est := estimator{paired: req.Paired, trials: cmp.Or(req.Trials, DefaultTrials)}
	bootstrap := (req.Confidence || req.Paired != "") && len(refs) > 0
	if bootstrap {
		est.resamples = metrics.Resamples{N: cmp.Or(req.Resamples, DefaultResamples), Size: len(refs), Seed: req.Seed}
	}
	if wantBLEU {
		tokenize, smooth, name := tokLC, metrics.SmoothNone, "regex"
		if !req.TokLC {
			tokenize, smooth, name = metrics.NewTokenizer13a().Tokenize, metrics.SmoothExp, "13a"
		}
		res.BLEUSignature = metrics.BLEUSignature(len(refSets), req.TokLC, name, smooth, req.Version)
		counts := sentenceCounts(systems, refSets, tokenize, metrics.SentenceBLEUCounts)
		score := func(c metrics.BLEUCounts) metrics.BLEUScore { return metrics.BLEUFromCounts(c, smooth) }
		for k, e := range estimate(est, counts, score, func(s metrics.BLEUScore) float64 { return s.Score }) {
			res.Systems[k].BLEU, res.Systems[k].BLEUInterval, res.Systems[k].BLEUTest = &e.score, e.interval, e.test
		}
	}
	if wantChrF {
		res.ChrFSignature = metrics.ChrFSignature(len(refSets), req.Version)
		counts := sentenceCounts(systems, refSets, func(line string) string { return line }, metrics.SentenceChrFCounts)
		for k, e := range estimate(est, counts, metrics.ChrFFromCounts, func(s metrics.ChrFScore) float64 { return s.Score }) {
			res.Systems[k].ChrF, res.Systems[k].ChrFInterval, res.Systems[k].ChrFTest = &e.score, e.interval, e.test
		}
	}
	if bootstrap {
		res.BLEUSignature = est.signature(res.BLEUSignature)
		res.ChrFSignature = est.signature(res.ChrFSignature)
	}
	if req.Perplexity {
		if res.Perplexity, res.PerplexityTokens, err = referencePerplexity(ctx, req, tok, srcs, refs, refName); err != nil {
			return res, err
		}
	}
	return res, nil
}

// translateForEval translates srcs with req.Model, detokenized, and writes them (or with req.Decode.NBest their
// n-best lists) to req.Output if set.
func translateForEval(ctx context.Context, req EvalRequest, tok data.Tokenizer, srcs []string) ([]string, error) {
	if err := req.Decode.Validate(); err != nil {
		return nil, err
	}
	trs, err := translateLines(ctx, req.Model, tok, srcs, req.Decode)
	if err != nil {
		return nil, err
	}
	hyps := make([]string, len(trs))
	for i, tr := range trs {
		hyps[i] = data.Detokenize(tr.Output)
	}
	if req.Output != nil {
		out := bufio.NewWriter(req.Output)
		for i, tr := range trs {
			req.Decode.writeTranslation(out, i, tr, data.Detokenize)
		}
		if err := out.Flush(); err != nil {
			return nil, fmt.Errorf("eval: write translations: %w", err)
		}
	}
	return hyps, nil
}

// estimated is one system's corpus score and, with resamples, its bootstrap estimates.
type estimated[S any] struct {
	score    S
	interval *metrics.Interval
	test     *metrics.PairedTest
}

// estimator says what estimate adds to the scores: with resamples (N > 0) each system's interval, and with a
// paired test each later system's test against the first.
type estimator struct {
	resamples metrics.Resamples // its Seed seeds PairedRandomization's trials too
	paired    string            // "", PairedBootstrap or PairedRandomization
	trials    int               // of PairedRandomization
}

// estimate scores each system from its sentences' counts, and adds what e asks for.
func estimate[C metrics.Counts[C], S any](e estimator, counts [][]C, score func(C) S, value func(S) float64) []estimated[S] {
	scalar := func(c C) float64 { return value(score(c)) }
	out := make([]estimated[S], len(counts))
	var baseline []float64 // the first system's resampled scores
	for k, sentences := range counts {
		var sum C
		for _, c := range sentences {
			sum = sum.Add(c)
		}
		out[k].score = score(sum)
		if e.resamples.N == 0 {
			continue
		}
		scores := metrics.ResampledScores(e.resamples, sentences, scalar)
		iv := metrics.ConfidenceInterval(scores)
		out[k].interval = &iv
		if k == 0 {
			baseline = scores
			continue
		}
		var t metrics.PairedTest
		switch e.paired {
		case PairedBootstrap:
			t = metrics.PairedBootstrap(value(out[0].score), value(out[k].score), baseline, scores)
		case PairedRandomization:
			t = metrics.ApproximateRandomization(counts[0], sentences, scalar, e.trials, e.resamples.Seed)
		default:
			continue
		}
		out[k].test = &t
	}
	return out
}

// signature adds to a signature, after "nrefs:N", sacreBLEU's "bs:N|seed:S" of the resamples, preceded by
// "ar:T|" with approximate randomization ("" stays "").
func (e estimator) signature(sig string) string {
	if sig == "" {
		return ""
	}
	add := fmt.Sprintf("bs:%d|seed:%d|", e.resamples.N, e.resamples.Seed)
	if e.paired == PairedRandomization {
		add = fmt.Sprintf("ar:%d|", e.trials) + add
	}
	nrefs, rest, _ := strings.Cut(sig, "|")
	return nrefs + "|" + add + rest
}

// referencePerplexity is the perplexity of refs given srcs under req.Model, by teacher forcing, and the number
// of target tokens it averages over.
func referencePerplexity(ctx context.Context, req EvalRequest, tok data.Tokenizer, srcs, refs []string, refName string) (float64, int, error) {
	var pairs []data.Pair
	srcToks, refToks := make([][]string, len(srcs)), make([][]string, len(srcs))
	for i := range srcs {
		srcToks[i], refToks[i] = tok.Tokenize(srcs[i]), tok.Tokenize(refs[i])
	}
	long := LongPairs(srcToks, refToks, req.LengthLimit)
	WarnLongPairs(req.Warn, long, req.LengthLimit, req.Src.Name+" and "+refName, "left out of the perplexity")
	for i := range srcs {
		if len(long) > 0 && long[0].Line == i+1 {
			long = long[1:]
			continue
		}
		pairs = append(pairs, data.Pair{Src: srcToks[i], Tgt: refToks[i], Line: i + 1})
	}
	if req.Model.Subwords != nil {
		pairs = SplitPairs(req.Model.Subwords, pairs) // the perplexity of the model's own tokens, subwords
	}
	pairs, _ = data.Filter(pairs, 0)
	if len(pairs) == 0 {
		return 0, 0, fmt.Errorf("eval: %s and %s have no pair with words on both sides", req.Src.Name, refName)
	}
	examples := data.EncodeExamples(pairs, req.Model.SrcVocab, req.Model.TgtVocab)
	loss, err := model.ValidLoss(ctx, req.Model, examples, req.Decode.Batch)
	if err != nil {
		return 0, 0, err
	}
	tokens := 0
	for _, e := range examples {
		tokens += len(e.Tgt) + 1 // with </s>
	}
	return math.Exp(loss), tokens, nil
}

// parseMetrics reads the metric names (empty: all).
func parseMetrics(names []string) (bleu, chrf bool, err error) {
	if len(names) == 0 {
		return true, true, nil
	}
	for _, n := range names {
		switch strings.ToLower(strings.TrimSpace(n)) {
		case MetricBLEU:
			bleu = true
		case MetricChrF:
			chrf = true
		default:
			return false, false, fmt.Errorf("eval: unknown metric %q (want bleu or chrf)", n)
		}
	}
	return bleu, chrf, nil
}

// readAllLines reads the lines of in, which must be want, the lines of the file refName (-1: any number).
func readAllLines(in NamedReader, want int, refName string) ([]string, error) {
	lines := data.NewLines(in.R, in.Name)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	if want >= 0 && len(out) != want {
		return nil, fmt.Errorf("eval: %s has %s but %s has %d", in.Name, plural.Count(len(out), "line"), refName, want)
	}
	return out, nil
}

// tokLC is the tokenization of training's validation BLEU and of the PyTorch reference (lowercase,
// \w+|[^\w\s]), except that "<unk>" in a model's output stays one token, as it is when token lists are scored,
// instead of becoming "<", "unk", ">".
func tokLC(line string) []string {
	regex := data.NewRegexTokenizer(true)
	var out []string
	for i, part := range strings.Split(line, data.UnkToken) {
		if i > 0 {
			out = append(out, data.UnkToken)
		}
		out = append(out, regex.Tokenize(part)...)
	}
	return out
}

// sentenceCounts counts each system's hypothesis of each sentence against the sentence's references, one from
// each set of refSets (at least one), every line read by read (BLEU's tokenizer; chrF takes the text as it is):
// counts[k][i] is system k's at sentence i.
func sentenceCounts[T, C any](systems, refSets [][]string, read func(string) T, count func(T, ...T) C) [][]C {
	refs := make([][]T, len(refSets[0])) // refs[i]: the references of sentence i
	for _, set := range refSets {
		for i, line := range set {
			refs[i] = append(refs[i], read(line))
		}
	}
	counts := make([][]C, len(systems))
	for k, hyps := range systems {
		counts[k] = make([]C, len(refs))
		for i, r := range refs {
			counts[k][i] = count(read(hyps[i]), r...)
		}
	}
	return counts
}
