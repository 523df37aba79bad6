package app

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/attend-nmt/attend/data"
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

// EvalRequest is everything `attend eval` needs: hypotheses to score against references, or a model and a
// source file to translate first.
type EvalRequest struct {
	Ref NamedReader // references, one per line (required)
	Hyp NamedReader // hypotheses, one per line; nil R: translate Src with Model

	Model     *model.Seq2Seq[float32]
	Lowercase bool // the model was trained on lowercased text (the checkpoint's data.lowercase)
	Src       NamedReader
	Decode    DecodeOptions
	// Hyps, when not nil, receives the model's translations, one per line, detokenized as they are scored.
	Hyps io.Writer

	// TokLC scores BLEU on attend's lowercased regex tokens without smoothing (BENCHMARK.md's figure) instead of
	// sacreBLEU's default (13a tokens, mixed case, exp smoothing). "<unk>" counts as one token.
	TokLC      bool
	Metrics    []string // MetricBLEU and/or MetricChrF; empty: both
	Perplexity bool     // also the references' perplexity under Model (teacher forcing)
	Version    string   // attend's version, for the signatures
}

// EvalResult holds the scores Eval computed: a nil pointer is a score that was not asked for.
type EvalResult struct {
	Sentences     int
	BLEU          *metrics.BLEUScore
	BLEUSignature string
	ChrF          *metrics.ChrFScore
	ChrFSignature string
	// Perplexity is exp of the token-averaged cross-entropy of the references (with </s>) given their sources
	// (tokens are the model's: subwords for a model trained on subwords),
	// over PerplexityTokens target tokens; pairs with an empty side are left out.
	Perplexity       float64
	PerplexityTokens int
}

// Report prints the result as sacreBLEU's text format does, one score per line:
// "BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-… = 34.76 65.2/… (BP = …)".
func (r EvalResult) Report(w io.Writer) {
	if r.BLEU != nil {
		fmt.Fprintf(w, "BLEU|%s = %s\n", r.BLEUSignature, strings.TrimPrefix(r.BLEU.String(), "BLEU = "))
	}
	if r.ChrF != nil {
		fmt.Fprintf(w, "chrF2|%s = %.2f\n", r.ChrFSignature, r.ChrF.Score)
	}
	if r.PerplexityTokens > 0 {
		fmt.Fprintf(w, "perplexity = %.3f (%d reference tokens)\n", r.Perplexity, r.PerplexityTokens)
	}
}

// Eval scores hypotheses against references. With req.Hyp unset it first translates req.Src with req.Model.
// Files must have the same number of lines; the error says both counts. Invalid UTF-8 names the file and line.
func Eval(ctx context.Context, req EvalRequest) (EvalResult, error) {
	var res EvalResult
	wantBLEU, wantChrF, err := parseMetrics(req.Metrics)
	if err != nil {
		return res, err
	}
	refs, err := readAllLines(req.Ref)
	if err != nil {
		return res, err
	}
	var hyps, srcs []string
	if req.Hyp.R != nil {
		if hyps, err = readAllLines(req.Hyp); err != nil {
			return res, err
		}
		if err := sameCount(req.Hyp.Name, len(hyps), req.Ref.Name, len(refs)); err != nil {
			return res, err
		}
	}
	if req.Hyp.R == nil || req.Perplexity {
		if req.Model == nil || req.Src.R == nil {
			return res, fmt.Errorf("eval: translating or --perplexity needs a model and a source file")
		}
		if srcs, err = readAllLines(req.Src); err != nil {
			return res, err
		}
		if err := sameCount(req.Src.Name, len(srcs), req.Ref.Name, len(refs)); err != nil {
			return res, err
		}
	}
	var tok data.Tokenizer
	if req.Model != nil {
		tok = modelTokenizer(req.Model, req.Lowercase)
	}
	if req.Hyp.R == nil {
		if err := req.Decode.Validate(); err != nil {
			return res, err
		}
		sents := make([][]string, len(srcs))
		for i, s := range srcs {
			sents[i] = tok.Tokenize(s)
		}
		trs, err := TranslateTokens(ctx, req.Model, sents, req.Decode)
		if err != nil {
			return res, err
		}
		hyps = make([]string, len(trs))
		for i, tr := range trs {
			hyps[i] = data.Detokenize(tr.Output)
		}
		if req.Hyps != nil {
			if _, err := io.WriteString(req.Hyps, strings.Join(hyps, "\n")+"\n"); err != nil {
				return res, fmt.Errorf("eval: write translations: %w", err)
			}
		}
	}
	res.Sentences = len(refs)
	if wantBLEU {
		var score metrics.BLEUScore
		if req.TokLC {
			score = metrics.CorpusBLEU(tokenizeAll(tokLC, hyps), tokenizeAll(tokLC, refs), metrics.SmoothNone)
			res.BLEUSignature = metrics.BLEUSignature(true, "regex", metrics.SmoothNone, req.Version)
		} else {
			t13a := metrics.NewTokenizer13a()
			score = metrics.CorpusBLEU(tokenizeAll(t13a.Tokenize, hyps), tokenizeAll(t13a.Tokenize, refs), metrics.SmoothExp)
			res.BLEUSignature = metrics.BLEUSignature(false, "13a", metrics.SmoothExp, req.Version)
		}
		res.BLEU = &score
	}
	if wantChrF {
		score := metrics.ChrF(hyps, refs)
		res.ChrF, res.ChrFSignature = &score, metrics.ChrFSignature(req.Version)
	}
	if req.Perplexity {
		var pairs []data.Pair
		for i := range srcs {
			pairs = append(pairs, data.Pair{Src: tok.Tokenize(srcs[i]), Tgt: tok.Tokenize(refs[i]), Line: i + 1})
		}
		if req.Model.Subwords != nil {
			pairs = SplitPairs(req.Model.Subwords, pairs) // the perplexity of the model's own tokens, subwords
		}
		pairs, _ = data.Filter(pairs, 0)
		if len(pairs) == 0 {
			return res, fmt.Errorf("eval: %s and %s have no pair with words on both sides", req.Src.Name, req.Ref.Name)
		}
		examples := data.EncodeExamples(pairs, req.Model.SrcVocab, req.Model.TgtVocab)
		loss, err := model.ValidLoss(ctx, req.Model, examples, req.Decode.Batch)
		if err != nil {
			return res, err
		}
		res.Perplexity = math.Exp(loss)
		for _, e := range examples {
			res.PerplexityTokens += len(e.Tgt) + 1 // with </s>
		}
	}
	return res, nil
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

func readAllLines(in NamedReader) ([]string, error) {
	lines := data.NewLines(in.R, in.Name)
	var out []string
	for lines.Scan() {
		out = append(out, lines.Text())
	}
	return out, lines.Err()
}

func sameCount(name string, n int, refName string, refN int) error {
	if n != refN {
		return fmt.Errorf("eval: %s has %d lines but %s has %d", name, n, refName, refN)
	}
	return nil
}

// tokLC is the benchmark's tokenization (lowercase, \w+|[^\w\s]), except that "<unk>" in a model's output
// stays one token, as it is when the benchmark scores token lists, instead of becoming "<", "unk", ">".
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

func tokenizeAll(tokenize func(string) []string, lines []string) [][]string {
	out := make([][]string, len(lines))
	for i, l := range lines {
		out[i] = tokenize(l)
	}
	return out
}
