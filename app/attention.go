package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
)

// forceWords scores given target sentences by teacher forcing (see model.Seq2Seq.Force), batch by batch,
// keeping the input order, telling progress (nil: nothing) of the pairs done. Each result's Output is the target
// as given (words outside the vocabulary are scored as <unk> but shown as they are); Attention and LogProbs have
// one row per target word and a last one for </s>. A pair with an empty side gives empty lists. A cancelled ctx
// stops it between batches with ctx's error.
//
// A model trained on subwords splits both sides with its merges; the results are then word-level, with the
// subwords in Subwords (see Translation). With tok, the model's tokenizer, the words are given pre-tokenized (the
// white-space tokens of the text, "Mr." one of them): tok splits each word into the model's tokens (then its
// subword merges, if any, into subwords), and the results are brought back to the given words as subwords are:
// Source and Output are the given words, and a word's attention sums or averages that of its pieces. With
// alignment, the Attention of a model with full-context alignment (model.full_context_alignment) is its
// alignment attention's.
func forceWords(ctx context.Context, m *model.Seq2Seq[float32], tok data.Tokenizer, srcs, tgts [][]string, batch int, progress Counter,
	alignment bool) ([]Translation, error) {
	if len(srcs) != len(tgts) {
		return nil, fmt.Errorf("force: %d sources for %d targets", len(srcs), len(tgts))
	}
	srcPieces, srcWord := splitSentences(m, tok, srcs)
	tgtPieces, tgtWord := splitSentences(m, tok, tgts)
	out, err := forcePieces(ctx, m, srcPieces, tgtPieces, batch, progress, alignment)
	if err != nil || srcWord == nil {
		return out, err
	}
	for i, tr := range out {
		out[i] = toGivenWords(tr, nonNil(srcs[i]), srcWord[i], nonNil(tgts[i]), tgtWord[i])
	}
	return out, nil
}

// forcePieces is forceWords without tok, on the model's own tokens; alignment as for forceWords.
func forcePieces(ctx context.Context, m *model.Seq2Seq[float32], srcs, tgts [][]string, batch int, progress Counter, alignment bool) ([]Translation, error) {
	if progress == nil {
		progress = nopPhase{}
	}
	out := make([]Translation, len(srcs))
	var examples []data.Example
	var index []int
	for i := range srcs {
		out[i] = Translation{Source: nonNil(srcs[i]), Output: nonNil(tgts[i]), Attention: [][]float32{}, LogProbs: []float64{}}
		if len(srcs[i]) == 0 || len(tgts[i]) == 0 {
			continue
		}
		examples = append(examples, data.Example{Src: m.SrcVocab.Encode(srcs[i]), Tgt: m.TgtVocab.Encode(tgts[i])})
		index = append(index, i)
	}
	progress.Add(int64(len(srcs) - len(examples))) // the pairs with an empty side
	for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: batch}, nil) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for r, f := range m.Force(&b) {
			i := index[b.Index[r]]
			out[i].Attention, out[i].LogProbs, out[i].Heads, out[i].SelfAttention = f.Attention, f.LogProbs, f.Heads, f.SelfAttention
			if alignment && f.Alignment != nil {
				out[i].Attention = f.Alignment
			}
		}
		progress.Add(int64(b.Real))
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Links are the hard alignment of a translation (see align.Hard): its output words (never </s>) to its source
// words, by argmax or, with threshold > 0, every weight at or above it.
//
// For a translation of subwords (tr.Subwords), the links are made between subwords and brought to words as
// OpenNMT-py's to_word_align does: two words are linked when any of their subwords are.
func (tr Translation) Links(threshold float64) []align.Link {
	if tr.Subwords != nil {
		return tr.Subwords.wordLinks(threshold)
	}
	return align.Hard(tr.Attention, len(tr.Source), min(len(tr.Output), len(tr.Attention)), threshold)
}

// ModelIdentity names a loaded checkpoint for heat maps and their exports.
func ModelIdentity(path string, ck *model.Checkpoint) heatmap.Model {
	return heatmap.Model{Checkpoint: path, Step: ck.Progress.Step, Description: ck.Model.Describe()}
}

// AttentionMap is a translation's attention as a heat map: its output words and, when the attention has a row
// for it, </s>. ref is the reference translation (nil for none); forced says the output is a reference scored
// by teacher forcing.
func AttentionMap(tr Translation, ref []string, forced bool, id heatmap.Model) *heatmap.Map {
	m := &heatmap.Map{Source: tr.Source, Output: labelRows(tr.Output, len(tr.Attention)), Reference: ref, Forced: forced, Weights: tr.Attention,
		Model: id}
	if forced {
		m.LogProbs = tr.LogProbs
	}
	return m
}

// HeatmapRequest is everything `attend heatmap` needs besides where the pictures go.
type HeatmapRequest struct {
	Model     *model.Checkpoint
	ModelPath string     // for the pictures' titles and the exports
	Sources   [][]string // tokenized sentences
	Refs      [][]string // tokenized references, one per source, or nil: with references, their attention is drawn
	// Tokenized says Sources and Refs are words as given (white-space tokens of pre-tokenized text), which the
	// model's tokenizer splits further (see TranslateWords): the maps show the given words.
	Tokenized bool
	// Decode is the search, as translate's: a beam of Decode.Beam draws the sentence that beam search chooses
	// (the one translate writes with the same settings), 0 or 1 greedy search's. Decode.Batch is also the
	// batch of the forced references, and Decode.Alignment draws a model's alignment attention, of the forced
	// references too.
	Decode DecodeOptions
}

// Heatmaps translates every source with req.Decode's search and, when references are given, scores them by
// teacher forcing, and returns one map per sentence: of the reference (forced, with the model's own output
// beside it) when there is one, of the model's output otherwise. Sentences with an empty side give maps with no
// rows.
func Heatmaps(ctx context.Context, req HeatmapRequest) ([]*heatmap.Map, error) {
	if req.Refs != nil && len(req.Refs) != len(req.Sources) {
		return nil, fmt.Errorf("heatmap: %d sentences but %d references", len(req.Sources), len(req.Refs))
	}
	m := req.Model.Model
	id := ModelIdentity(req.ModelPath, req.Model)
	if e := req.Decode.Ensemble; e != nil && len(e.Models) > 1 {
		id.Description += fmt.Sprintf("; the first of an ensemble of %d models, which chose the output words", len(e.Models))
	}
	var tok data.Tokenizer
	if req.Tokenized {
		tok = req.Model.Config.Data.Tokenizer()
	}
	trs, err := TranslateWords(ctx, m, tok, req.Sources, req.Decode)
	if err != nil {
		return nil, err
	}
	maps := make([]*heatmap.Map, len(trs))
	if req.Refs == nil {
		for i, tr := range trs {
			maps[i] = AttentionMap(tr, nil, false, id)
		}
		return maps, nil
	}
	forced, err := forceWords(ctx, m, tok, req.Sources, req.Refs, req.Decode.Batch, nil, req.Decode.Alignment)
	if err != nil {
		return nil, err
	}
	for i, f := range forced {
		maps[i] = AttentionMap(f, req.Refs[i], true, id)
		maps[i].ModelOutput = trs[i].Output
	}
	return maps, nil
}

// AlignRequest is everything `attend align` needs.
type AlignRequest struct {
	Model     *model.Seq2Seq[float32]
	Reverse   *model.Seq2Seq[float32] // target→source model for symmetrization, or nil
	Sym       align.Symmetrization    // how to combine the two directions (with Reverse)
	Lowercase bool
	Corpus    Corpus // the sentence pairs
	// Tokenized reads the corpus as pre-tokenized text: the positions of the links are those of its white-space
	// tokens, each of which the model's tokenizer may split further (see forceWords).
	Tokenized bool
	Output    io.Writer
	Threshold float64        // 0: argmax alignment
	Gold      [][]align.Link // gold links of the first lines, one entry per line, or nil
	GoldName  string         // the gold file, for messages
	// OneBasedGold says the gold file's positions count from 1, for messages quoting its links.
	OneBasedGold bool
	Batch        int
	// MaxLen skips the pairs with a side longer than this many tokens (0: none; see LengthLimit): each gets an
	// empty line, is not scored, and is named in a warning to Warn (nil: no warnings).
	MaxLen int
	Warn   io.Writer
	// Progress (nil: nowhere) is shown the pairs aligned, in one phase: forward, then reverse with Reverse.
	Progress PhaseRecorder
	// DecoderAttention links by the decoder's attention even in a model with full-context alignment
	// (model.full_context_alignment), whose alignment attention is read otherwise.
	DecoderAttention bool
}

// Align aligns every sentence pair of req.Corpus by the attention of the model scoring the target with teacher forcing
// (its full-context alignment attention when it has one, unless req.DecoderAttention), writes one Pharaoh line per
// pair, and, with gold links, returns the scores against them. The gold may cover only the first lines of the corpus
// (scores.Sentences says how many were scored); more gold lines than sentence pairs, or a link beyond its sentence
// pair, are an error. A pair longer than req.MaxLen is skipped with a warning.
func Align(ctx context.Context, req AlignRequest) (align.Scores, error) {
	var read, split data.Tokenizer = Tokenizer(req.Model, req.Lowercase), nil
	if req.Tokenized {
		read, split = data.WhitespaceTokenizer{}, Tokenizer(req.Model, req.Lowercase)
	}
	pairs, err := req.Corpus.Read(read)
	if err != nil {
		return align.Scores{}, err
	}
	if err := checkGold(req.Gold, pairs, req.Corpus, req.GoldName, req.OneBasedGold); err != nil {
		return align.Scores{}, err
	}
	srcs, tgts := sides(pairs)
	long := LongPairs(srcs, tgts, req.MaxLen)
	skip := make(map[int]bool, len(long))
	for _, p := range long {
		skip[p.Line-1] = true
		srcs[p.Line-1], tgts[p.Line-1] = nil, nil // an empty pair: no links
	}
	WarnLongPairs(req.Warn, long, req.MaxLen, req.Corpus.String(), "skipped: its alignment line is empty and not scored")
	passes := 1
	if req.Reverse != nil {
		passes = 2 // the pairs forward, then backward
	}
	phase := orNoPhases(req.Progress).StartPhase("aligning "+req.Corpus.String(), int64(passes*len(pairs)), "sentence pair")
	defer phase.End()
	forward, err := forceWords(ctx, req.Model, split, srcs, tgts, req.Batch, phase, !req.DecoderAttention)
	if err != nil {
		return align.Scores{}, err
	}
	var reverse []Translation
	if req.Reverse != nil {
		if req.Tokenized {
			split = Tokenizer(req.Reverse, req.Lowercase)
		}
		if reverse, err = forceWords(ctx, req.Reverse, split, tgts, srcs, req.Batch, phase, !req.DecoderAttention); err != nil {
			return align.Scores{}, err
		}
	}
	links := make([][]align.Link, len(forward))
	for i, tr := range forward {
		links[i] = tr.Links(req.Threshold)
		if reverse != nil {
			links[i] = align.Symmetrize(links[i], align.Transpose(reverse[i].Links(req.Threshold)), req.Sym)
		}
	}
	return writeLinks(req.Output, links, req.Gold, skip)
}

// checkGold reports gold links with more lines than the corpus has pairs, or with a link beyond its pair.
func checkGold(gold [][]align.Link, pairs []data.Pair, corpus Corpus, goldName string, oneBased bool) error {
	if len(gold) > len(pairs) {
		return fmt.Errorf("align: the gold alignment has %s, the corpus (%s) %d", plural.Count(len(gold), "line"), corpus, len(pairs))
	}
	srcLens, tgtLens := make([]int, len(gold)), make([]int, len(gold))
	for i := range gold {
		srcLens[i], tgtLens[i] = len(pairs[i].Src), len(pairs[i].Tgt)
	}
	if err := align.CheckLengths(gold, srcLens, tgtLens, goldName, oneBased); err != nil {
		return fmt.Errorf("%w (words of %s as they are read for aligning)", err, corpus)
	}
	return nil
}

// writeLinks writes one Pharaoh line per sentence pair to w (0-based positions) and returns the scores of the
// first len(gold) pairs against the gold links, leaving out those in skip.
func writeLinks(w io.Writer, links, gold [][]align.Link, skip map[int]bool) (align.Scores, error) {
	var scores align.Scores
	var out strings.Builder
	for i, l := range links {
		if i < len(gold) && !skip[i] {
			scores.Add(l, gold[i])
		}
		out.WriteString(align.FormatPharaoh(l, false))
		out.WriteByte('\n')
	}
	if _, err := io.WriteString(w, out.String()); err != nil {
		return scores, fmt.Errorf("write alignments: %w", err)
	}
	return scores, nil
}
