package app

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// TranslateRequest is everything `attend translate` needs: what to translate, how (TextOptions), and where the
// translations go.
type TranslateRequest struct {
	TextOptions
	Model     *model.Seq2Seq[float32]
	Input     io.Reader
	InputName string // for error messages
	Output    io.Writer
	// Attention, optional, gets one JSON object per sentence: its source and output words, and the attention
	// matrix between them (see Translation's JSON form).
	Attention io.Writer
	// Alignments, optional, gets one line per sentence: the Pharaoh links of its output words to its source
	// words (0-based, source first), by argmax of the attention or, with Threshold > 0, every weight at or above
	// (see Translation.Links).
	Alignments io.Writer
	Threshold  float64
}

// DecodeOptions chooses how sentences are decoded. The zero values of the search settings give greedy search.
type DecodeOptions struct {
	MaxLen int // longest translation in tokens
	Batch  int // sentences per batch
	// Beam is the beam width (0 or 1: greedy search); Alpha and Beta weigh its GNMT length and coverage
	// penalties, NBest is how many hypotheses each sentence keeps, with their scores (0: the best, without
	// its score), and MaxLenRatio > 0 caps a translation at that multiple of its source length (see
	// decoder.BeamOptions).
	Beam, NBest int
	Alpha, Beta float64
	MaxLenRatio float64
	ReplaceUnk  bool // put the most-attended source word in place of each <unk> in the output
	// Heads keeps each head's weights (Translation.Heads) when the model's attention has several heads, and the
	// self-attention layers' weights (Translation.SelfAttention) when it has those: one teacher-forced pass of the
	// chosen translation per batch recovers them.
	Heads bool
	// Alignment makes each translation's Attention that of the model's alignment attention, when the model has
	// one (model.full_context_alignment): the attention that knows each output word, which guided alignment
	// trained toward word links. One teacher-forced pass of the chosen translation per batch computes it.
	Alignment bool
	// Shortlist, when set, restricts each sentence to the target words its lexical shortlist lists (see package
	// lexicon): the model's Lexicon gives each source word's candidates. Nil scores the whole vocabulary.
	Shortlist *lexicon.ShortlistSize
	// Precision is the products the search multiplies on (kernels.Choose; "" is auto): with bfloat16 ones, greedy
	// search of recurrent models without a shortlist scores the vocabulary in bfloat16 and rescores the near-best
	// words exactly, and so does beam search of one recurrent model without a shortlist (decoder.Output).
	// float32 is the bit-for-bit reference.
	Precision kernels.Precision
	// products are Precision's, once chosen (choose); nil until then.
	products *kernels.Products
	// Progress, when not nil, is told how many sentences were just translated, as they are (an empty one at
	// once), for a progress display. It may be called from several goroutines at a time.
	Progress Counter
	// Ensemble, when set, translates with its models together, averaging their log-probabilities at every step
	// (model.Ensemble); its first model must be the model translating, whose vocabularies, tokenizer and
	// attention are the translations'. Nil translates with that model alone. An ensemble of several models
	// takes no Shortlist.
	Ensemble *model.Ensemble
}

// Counter is told of units of work as they are done, for a progress display. A Counter in DecodeOptions
// should be a pointer, so that the options stay comparable.
type Counter interface {
	Add(n int64)
}

// progress reports n sentences translated to o.Progress, if any.
func (o DecodeOptions) progress(n int) {
	if o.Progress != nil && n > 0 {
		o.Progress.Add(int64(n))
	}
}

// Validate reports a setting out of range, naming it.
func (o DecodeOptions) Validate() error {
	if o.Batch <= 0 || o.MaxLen <= 0 {
		return fmt.Errorf("translate: batch %d and max length %d must be positive", o.Batch, o.MaxLen)
	}
	// Checked for greedy search too, which ignores them: a weight that cannot be right is an error whatever the
	// search.
	if err := decoder.AlphaRange().Check("length penalty alpha", o.Alpha); err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	if err := decoder.BetaRange().Check("coverage penalty beta", o.Beta); err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	if err := decoder.LengthRatioRange().Check("length ratio", o.MaxLenRatio); err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	if s := o.Shortlist; s != nil && (s.Frequent < 0 || s.Best < 0 || s.Frequent == 0 && s.Best == 0) {
		return fmt.Errorf("translate: shortlist of %d frequent words and %d per source word; want at least one word", s.Frequent, s.Best)
	}
	if o.greedy() {
		return nil
	}
	if err := o.beamOptions().Validate(); err != nil {
		return fmt.Errorf("translate: %w", err)
	}
	return nil
}

// choose returns o with its products chosen from o.Precision (kernels.Choose), once: an error for a setting
// this CPU cannot do.
func (o DecodeOptions) choose() (DecodeOptions, error) {
	if o.products != nil {
		return o, nil
	}
	p, err := kernels.Choose(o.Precision)
	if err != nil {
		return o, fmt.Errorf("translate: %w", err)
	}
	o.products = &p
	return o, nil
}

// modelSearch is the model.Search that o asks for (choose must have run), stopped when stop is closed, over
// jobs batches (0: not known): greedy search on o's products, but in float32 with a shortlist, which scores a
// few words; beam search on o's products.
func (o DecodeOptions) modelSearch(stop <-chan struct{}, jobs int) model.Search {
	s := model.Search{MaxLen: o.MaxLen, Products: *o.products, Rows: o.Batch, Jobs: jobs, Stop: stop}
	switch {
	case !o.greedy():
		beam := o.beamOptions()
		s.Beam = &beam
	case o.Shortlist != nil:
		s.Products = kernels.Float32Products()
	}
	return s
}

// greedy is true when the settings ask for nothing greedy search cannot do: it gives the same result as a
// beam of 1, faster.
func (o DecodeOptions) greedy() bool { return o.Beam <= 1 && o.NBest == 0 && o.MaxLenRatio == 0 }

func (o DecodeOptions) beamOptions() decoder.BeamOptions {
	return decoder.BeamOptions{Width: max(o.Beam, 1), NBest: max(o.NBest, 1), MaxLen: o.MaxLen,
		MaxLenRatio: o.MaxLenRatio, Alpha: o.Alpha, Beta: o.Beta}
}

// windowBatchesPerCore is the number of batches per core in one window of Translate: enough to give the length
// bucketing something to sort, and to keep the batch full until near the end of the window (every window ends
// with the batch draining as its last sentences finish; 4 per core cost 13% of greedy decoding's speed on
// Multi30k's test_2016_flickr against 16, measured with a batch per core).
const windowBatchesPerCore = 16

// DefaultPause is the wait for more input before a partial window of lines is translated.
const DefaultPause = 50 * time.Millisecond

// Translation is one translated sentence with its attention: Attention[t][i] is the weight of source word i
// when output word t (or the final </s>) was produced. An empty sentence has empty (not null) lists. Under
// beam search Score is the hypothesis' score (its log-probability, length-normalised and with the coverage
// penalty when those are on) and Alternatives holds the rest of the n-best list, best first.
//
// Its JSON form (translate --attention) labels every row of "attention": "output" ends with "</s>" when the
// attention has the row of </s>, as the JSON of a heat map does, and so does the "output" of "subwords";
// reading it back removes that label again.
type Translation struct {
	Source    []string    `json:"source"`
	Output    []string    `json:"output"`
	Attention [][]float32 `json:"attention"`
	// Heads, for a model whose attention has several heads (multi-head) when asked for, holds one matrix like
	// Attention per head; Attention is their average.
	Heads [][][]float32 `json:"heads,omitempty"`
	// SelfAttention, for a model with self-attention encoder layers when asked for (with Heads), holds each
	// block's heads' weights among the source words: SelfAttention[l][j][i][k] is the weight of word k for word i
	// in head j of block l.
	SelfAttention [][][][]float32 `json:"self_attention,omitempty"`
	// LogProbs, for a target scored by teacher forcing (forceWords), is the log-probability of each output
	// word and of the final </s>.
	LogProbs     []float64     `json:"log_probs,omitempty"`
	Score        float64       `json:"score,omitempty"`
	Alternatives []Alternative `json:"-"`
	// Subwords, when the words above are not the model's own tokens — a model trained on subwords, or the
	// words of the text (TranslateText, TranslateWords, forceWords) — is the translation as the model saw it:
	// its pieces. The fields above are then words: Source the input words, Output the output pieces joined into
	// words, Attention brought to words (see WordAttention), LogProbs summed over each word's pieces.
	Subwords *Subwords `json:"subwords,omitempty"`
}

// translationJSON is Translation without its JSON methods.
type translationJSON Translation

// MarshalJSON writes the translation with "</s>" at the end of "output" when the attention has its row.
func (tr Translation) MarshalJSON() ([]byte, error) {
	j := translationJSON(tr)
	j.Output = labelRows(tr.Output, len(tr.Attention))
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes: a last "output" word "</s>" that labels the row of </s> is not
// part of the translation.
func (tr *Translation) UnmarshalJSON(b []byte) error {
	*tr = Translation{}
	err := json.Unmarshal(b, (*translationJSON)(tr))
	tr.Output = unlabelRows(tr.Output, len(tr.Attention))
	return err
}

// labelRows returns output with data.EOSToken appended when there are more attention rows than output words.
func labelRows(output []string, rows int) []string {
	if rows > len(output) {
		return append(append(make([]string, 0, len(output)+1), output...), data.EOSToken)
	}
	return output
}

// unlabelRows undoes labelRows.
func unlabelRows(output []string, rows int) []string {
	if n := len(output); n > 0 && n == rows && output[n-1] == data.EOSToken {
		return output[:n-1]
	}
	return output
}

// writeTranslation writes the translation of sentence id (counted from 0) as translate does, its words written by
// text: one line, or with o.NBest its n-best list in Marian's and Moses's n-best format, the best first: "id |||
// translation ||| F0= score ||| score" per hypothesis. The one feature, F0, is the model's score: the
// log-probability, with the length and coverage penalties when o.Alpha and Beta are on; the last field, the
// total, is the same figure. A write error stays in w (a bufio.Writer reports it at Flush).
func (o DecodeOptions) writeTranslation(w io.Writer, id int, tr Translation, text func([]string) string) {
	if o.NBest <= 0 {
		fmt.Fprintln(w, text(tr.Output))
		return
	}
	fmt.Fprintf(w, "%d ||| %s ||| F0= %.6f ||| %.6f\n", id, text(tr.Output), tr.Score, tr.Score)
	for _, alt := range tr.Alternatives {
		fmt.Fprintf(w, "%d ||| %s ||| F0= %.6f ||| %.6f\n", id, text(alt.Output), alt.Score, alt.Score)
	}
}

// Alternative is a lower-ranked hypothesis of an n-best list.
type Alternative struct {
	Output []string
	Score  float64
}

// inputLine is one line read by Translate's reader goroutine, or the error that ended the input.
type inputLine struct {
	text string
	err  error
}

// readLines reads the lines of r on a goroutine of its own and sends them, then the error that ended the
// input if any, on the channel it returns, which it closes at the end of the input. A reader of the channel can
// thus notice a pause in the input, or stop waiting when its context is cancelled; the goroutine may then stay
// blocked in a read, which is harmless when the command is about to exit.
func readLines(r io.Reader, name string) <-chan inputLine {
	lines := make(chan inputLine, 1024)
	go func() {
		defer close(lines)
		in := data.NewLines(r, name)
		for in.Scan() {
			lines <- inputLine{text: in.Text()}
		}
		if err := in.Err(); err != nil {
			lines <- inputLine{err: err}
		}
	}()
	return lines
}

// Translate reads sentences and writes one translation per input line (an empty line gives an empty line), in
// order, as it goes: it collects a window of lines — windowBatchesPerCore batches per core, or whatever arrived before
// input paused for DefaultPause — translates the window on every core, writes it, and flushes. A
// cancelled ctx stops it with ctx's error, a beam search before its next step: every sentence translated before
// the first that was not is written first. It returns the number of sentences written.
func Translate(ctx context.Context, req TranslateRequest) (int, error) {
	if err := req.Decode.Validate(); err != nil {
		return 0, err
	}
	var err error
	if req.Decode, err = req.Decode.choose(); err != nil {
		return 0, err
	}
	Started(ctx) // what is translated is written as it goes, and stays
	lines := readLines(req.Input, req.InputName)
	opts := req.TextOptions
	out := bufio.NewWriter(req.Output)
	var attn *json.Encoder
	if req.Attention != nil {
		attn = json.NewEncoder(req.Attention)
	}
	var links *bufio.Writer
	if req.Alignments != nil {
		links = bufio.NewWriter(req.Alignments)
	}
	windowSize := req.Decode.Batch * runtime.GOMAXPROCS(0) * windowBatchesPerCore
	text := func(output []string) string { return translationText(output, opts) }
	written := 0
	for {
		window, inputErr, more := collectWindow(ctx, lines, windowSize, DefaultPause)
		if err := ctx.Err(); err != nil {
			return written, err
		}
		// Cancelled, TranslateText returns ctx's error with the window's first translations, those it finished:
		// they are written before the error is returned.
		trs, err := TranslateText(ctx, req.Model, window, opts)
		for _, tr := range trs {
			req.Decode.writeTranslation(out, written, tr, text)
			if attn != nil {
				if err := attn.Encode(tr); err != nil {
					return written, fmt.Errorf("write attention: %w", err)
				}
			}
			if links != nil {
				links.WriteString(align.FormatPharaoh(tr.Links(req.Threshold), false))
				links.WriteByte('\n')
			}
			written++
		}
		if err := out.Flush(); err != nil {
			return written, fmt.Errorf("write translations: %w", err)
		}
		if links != nil {
			if err := links.Flush(); err != nil {
				return written, fmt.Errorf("write alignments: %w", err)
			}
		}
		if err != nil {
			return written, err
		}
		if inputErr != nil {
			return written, inputErr
		}
		if !more {
			return written, nil
		}
	}
}

// collectWindow takes lines until it has size of them, the input ends, or no line arrives for pause (0: no line
// is waiting). more is false once the input has ended (cleanly, or with inputErr).
func collectWindow(ctx context.Context, lines <-chan inputLine, size int, pause time.Duration) (window []string, inputErr error, more bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for len(window) < size {
		var wait <-chan time.Time
		switch {
		case len(window) == 0:
		case pause == 0 && len(lines) == 0:
			return window, nil, true
		case pause > 0:
			timer.Reset(pause)
			wait = timer.C
		}
		select {
		case <-ctx.Done():
			return window, nil, false
		case l, ok := <-lines:
			if !ok {
				return window, nil, false
			}
			if l.err != nil {
				return window, l.err, false
			}
			window = append(window, l.text)
		case <-wait:
			return window, nil, true
		}
		timer.Stop()
	}
	return window, nil, true
}

// TranslateTokens translates tokenized sentences with the search opts chooses (greedy, or beam search with a batch of
// opts.Batch sentences times the beam width), batch by batch on every core, keeping the input order. The model chooses
// how (model.Ensemble.Translate). A cancelled ctx stops it, a beam search before its next step, with ctx's error and
// the translations of the sentences before the first it did not finish (a prefix of sents, maybe empty), which the
// caller may write. A model trained on subwords splits the words of sents with its merges and joins its output back
// into words (see Translation.Subwords); with opts.ReplaceUnk an <unk> subword becomes the source subword that got the
// most attention, marker and all, so that a name copied piece by piece comes out whole.
func TranslateTokens(ctx context.Context, m *model.Seq2Seq[float32], sents [][]string, opts DecodeOptions) ([]Translation, error) {
	return TranslateWords(ctx, m, nil, sents, opts)
}

// translateLines tokenizes lines with tok and translates them (TranslateTokens).
func translateLines(ctx context.Context, m *model.Seq2Seq[float32], tok data.Tokenizer, lines []string, opts DecodeOptions) ([]Translation, error) {
	sents := make([][]string, len(lines))
	for i, text := range lines {
		sents[i] = tok.Tokenize(text)
	}
	return TranslateTokens(ctx, m, sents, opts)
}

// TranslateWords is TranslateTokens on sentences of words given pre-tokenized (the white-space tokens of the
// text): tok, the model's tokenizer, splits each word into the model's tokens (then its subword merges, if any,
// into subwords), and each translation's Source is the given words, its attention columns summed over each
// word's pieces. A nil tok makes it TranslateTokens.
func TranslateWords(ctx context.Context, m *model.Seq2Seq[float32], tok data.Tokenizer, sents [][]string, opts DecodeOptions) ([]Translation, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	pieces, wordOf := splitSentences(m, tok, sents)
	out, err := translatePieces(ctx, m, pieces, opts) // with ctx's error, the translations of a prefix of sents
	if wordOf == nil {
		return out, err
	}
	for i, tr := range out {
		out[i] = toWords(tr, nonNil(sents[i]), wordOf[i])
	}
	return out, err
}

// translatePieces is TranslateTokens on the model's own tokens.
func translatePieces(ctx context.Context, m *model.Seq2Seq[float32], sents [][]string, opts DecodeOptions) ([]Translation, error) {
	opts, models, batchSize, err := prepareSearch(m, opts)
	if err != nil {
		return nil, err
	}
	out := make([]Translation, len(sents))
	ids := make([][]int, len(sents)) // the chosen translation's target ids
	done := make([]bool, len(sents)) // the sentences translated, for a search stopped by ctx
	var examples []data.Example
	var index []int // position in sents of each example
	for i, s := range sents {
		if s == nil {
			s = []string{}
		}
		out[i] = Translation{Source: s, Output: []string{}, Attention: [][]float32{}}
		if len(s) == 0 {
			done[i] = true
			continue
		}
		examples = append(examples, data.Example{Src: m.SrcVocab.Encode(s)})
		index = append(index, i)
	}
	opts.progress(len(sents) - len(examples)) // the empty ones
	batches := data.MakeBatches(examples, data.BatchOptions{BatchSize: batchSize}, nil)
	shortlist := batchShortlist(m, examples, opts.Shortlist)
	taken := 0
	next := func() *model.Job {
		if taken == len(batches) || ctx.Err() != nil {
			return nil
		}
		b := &batches[taken]
		taken++
		j := &model.Job{Batch: b, IDs: make([]int, b.Real), Shortlist: shortlist(b)}
		for r := range j.IDs {
			j.IDs[r] = index[b.Index[r]]
		}
		return j
	}
	err = models.Translate(opts.modelSearch(ctx.Done(), len(batches)), next, func(i int, list []decoder.Scored) {
		out[i], ids[i], done[i] = listTranslation(m, sents[i], list, opts.ReplaceUnk), list[0].Tokens, true
		opts.progress(1)
	})
	if err != nil {
		panic(err) // Validate checked the options, prepareSearch the shortlist
	}
	stopped := ctx.Err()
	if stopped != nil {
		// Keep the sentences translated before the first that was not: the caller writes them in order.
		n := 0
		for n < len(done) && done[n] {
			n++
		}
		out, ids = out[:n], ids[:n]
		k := 0
		for k < len(index) && index[k] < n {
			k++
		}
		examples, index = examples[:k], index[:k]
		// The forced pass of those few sentences is short, and finishes them as asked.
		ctx = context.WithoutCancel(ctx)
	}
	heads, alignment := opts.Heads && m.HasHeads(), opts.Alignment && m.HasAlignment()
	if heads || alignment {
		if err := addForced(ctx, m, out, examples, index, ids, opts.Batch, heads, alignment); err != nil {
			return nil, err
		}
	}
	return out, stopped
}

// listTranslation is the translation of src that a search's list gives: its first hypothesis's tokens spelled
// (outputTokens), attention and score, the others as Alternatives.
func listTranslation(m *model.Seq2Seq[float32], src []string, list []decoder.Scored, replaceUnk bool) Translation {
	best := list[0]
	tr := Translation{Source: src, Output: outputTokens(m.TgtVocab, best.Hypothesis, src, replaceUnk), Attention: best.Attention, Score: best.Score}
	for _, alt := range list[1:] {
		tr.Alternatives = append(tr.Alternatives, Alternative{Output: outputTokens(m.TgtVocab, alt.Hypothesis, src, replaceUnk), Score: alt.Score})
	}
	return tr
}

// maxBeamLogits bounds the logits of one beam-search batch, batch × beam rows of the target vocabulary's width
// (float32: 512 MB), whatever --batch and --beam ask: a wide beam takes fewer sentences per batch. An ensemble
// has each model's logits: its beam counts once per model.
const maxBeamLogits = 1 << 27

// prepareSearch readies opts for a search with m, as translate and a stream search: a beam wider than the
// target vocabulary is cut to it (the command says so), m is checked against opts (CheckModel) and the products
// are chosen (choose). It returns opts, the models that translate (opts.Ensemble, or m alone), and the number of
// sentences per batch: opts.Batch, or for beam search fewer so that the batch's sentences × beam × vocabulary
// logits (the beam counting once per model) stay within maxBeamLogits, and at least one.
func prepareSearch(m *model.Seq2Seq[float32], opts DecodeOptions) (DecodeOptions, *model.Ensemble, int, error) {
	vocab := m.TgtVocab.Size()
	opts.Beam = min(opts.Beam, vocab)
	opts.NBest = min(opts.NBest, opts.Beam)
	if err := opts.CheckModel("", m); err != nil {
		return opts, nil, 0, fmt.Errorf("translate: %w", err)
	}
	models := cmp.Or(opts.Ensemble, model.Single(m))
	opts, err := opts.choose()
	if err != nil || opts.greedy() {
		return opts, models, opts.Batch, err
	}
	return opts, models, max(1, min(opts.Batch, maxBeamLogits/max(opts.Beam*len(models.Models)*vocab, 1))), nil
}

// CheckModel reports why m, the checkpoint name (a path; "" for "the model"), cannot translate with o, or nil
// when it can: an ensemble (o.Ensemble) must be led by m, and a shortlist (o.Shortlist) needs one recurrent
// model with a lexicon. It is the one check of a model against the search settings: translate, eval and
// heatmap make it at start (SearchFlags.Options), serve at start and at each reload, and every translation
// again before it decodes.
func (o DecodeOptions) CheckModel(name string, m *model.Seq2Seq[float32]) error {
	path, flag := name, name
	if name == "" {
		path, flag = "the model", "M"
	}
	e := o.Ensemble
	switch {
	case e != nil && (len(e.Models) == 0 || e.Models[0] != m):
		return errors.New("the ensemble's first model is not the model translating")
	case o.Shortlist == nil:
		return nil
	case e != nil && len(e.Models) > 1:
		return fmt.Errorf("--shortlist with %d models: a shortlist scores a few words of one model's output layer, "+
			"where an ensemble averages every model's log-probabilities over the whole vocabulary; give one --model, or drop --shortlist", len(e.Models))
	case !m.CanShortlist():
		return fmt.Errorf("--shortlist: %s is a Transformer (model.type transformer), which has no shortlist yet; translate without --shortlist", path)
	case m.Lexicon == nil:
		return fmt.Errorf("--shortlist: %s has no lexicon (it was saved before training had learned one, or trained before attend learned them); "+
			"add one with: attend lexicon --model %s --src SRC --tgt TGT", path, flag)
	}
	return nil
}

// batchShortlist returns what makes the shortlist of a batch of examples under s: nil for every batch when s is
// nil. Each row's candidates come from its example's source words; a padding row gets those of an empty source.
// The output layer's weights are copied once, for all the batches.
func batchShortlist(m *model.Seq2Seq[float32], examples []data.Example, s *lexicon.ShortlistSize) func(*data.Batch) *decoder.Shortlist[float32] {
	if s == nil {
		return func(*data.Batch) *decoder.Shortlist[float32] { return nil }
	}
	rows := m.OutputRows()
	return func(b *data.Batch) *decoder.Shortlist[float32] { return shortlistOf(m, rows, examples, *s, b) }
}

// shortlistOf is the shortlist under s of a batch of examples, scored with the output layer's rows.
func shortlistOf(m *model.Seq2Seq[float32], rows *decoder.OutputRows[float32], examples []data.Example, s lexicon.ShortlistSize, b *data.Batch) *decoder.Shortlist[float32] {
	sl := &decoder.Shortlist[float32]{Output: rows, Candidates: make([][]int, b.Rows)}
	for r := range b.Rows {
		var src []int
		if r < b.Real {
			src = examples[b.Index[r]].Src
		}
		sl.Candidates[r] = m.Lexicon.Candidates(src, s, m.TgtVocab.Size(), nil)
	}
	return sl
}

// addForced fills, with heads, the Heads (and SelfAttention) of the translations out[index[k]] of examples[k],
// and with alignment makes their Attention the alignment attention's (DecodeOptions.Alignment), by feeding each
// chosen translation ids[index[k]] back through the decoder (model.Seq2Seq.Force), which repeats the search's
// computation of those words; a translation that hit the length limit has no </s> row, so its extra forced row
// is dropped.
func addForced(ctx context.Context, m *model.Seq2Seq[float32], out []Translation, examples []data.Example, index []int, ids [][]int, batch int,
	heads, alignment bool) error {
	forced := make([]data.Example, len(examples))
	for k, ex := range examples {
		tgt := ids[index[k]]
		if tgt == nil {
			tgt = []int{} // an empty translation still has its </s> row; a nil target would mean none at all
		}
		forced[k] = data.Example{Src: ex.Src, Tgt: tgt}
	}
	for _, b := range data.MakeBatches(forced, data.BatchOptions{BatchSize: batch}, nil) {
		if err := ctx.Err(); err != nil {
			return err
		}
		for r, f := range m.Force(&b) {
			tr := &out[index[b.Index[r]]]
			if heads {
				tr.Heads, tr.SelfAttention = f.Heads, f.SelfAttention
				for j := range tr.Heads {
					tr.Heads[j] = tr.Heads[j][:len(tr.Attention)]
				}
			}
			if alignment {
				tr.Attention = f.Alignment[:len(tr.Attention)]
			}
		}
	}
	return nil
}

// outputTokens spells a hypothesis. With replaceUnk, each <unk> becomes the source word that got the most
// attention when it was produced (the first of equals).
func outputTokens(v *data.Vocab, h decoder.Hypothesis, source []string, replaceUnk bool) []string {
	words := make([]string, len(h.Tokens))
	for i, id := range h.Tokens {
		words[i] = v.Token(id)
		if replaceUnk && id == data.UnkID && i < len(h.Attention) && len(h.Attention[i]) > 0 {
			words[i] = source[kernels.Argmax(h.Attention[i])]
		}
	}
	return words
}
