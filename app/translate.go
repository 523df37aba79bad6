package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/model"
)

// TranslateRequest is everything `attend translate` needs.
type TranslateRequest struct {
	Model     *model.Seq2Seq[float32]
	Lowercase bool
	Input     io.Reader
	InputName string // for error messages
	Output    io.Writer
	Attention io.Writer // optional: one JSON object per sentence with its source, output and attention matrix
	// Alignments, optional, gets one line per sentence: the Pharaoh links of its output words to its source
	// words (0-based, source first), by argmax of the attention or, with Threshold > 0, every weight at or above.
	Alignments io.Writer
	Threshold  float64
	Decode     DecodeOptions
	// Pause is how long Translate waits for another input line before it translates what has arrived, so
	// that typed or piped-in lines are answered at once (0: DefaultPause).
	Pause time.Duration
}

// DecodeOptions chooses how sentences are decoded.
type DecodeOptions struct {
	MaxLen int // longest translation in tokens
	Batch  int // sentences per batch
}

// Validate reports a setting out of range, naming it.
func (o DecodeOptions) Validate() error {
	if o.Batch <= 0 || o.MaxLen <= 0 {
		return fmt.Errorf("translate: batch %d and max length %d must be positive", o.Batch, o.MaxLen)
	}
	return nil
}

// DefaultPause is the wait for more input before a partial window of lines is translated.
const DefaultPause = 50 * time.Millisecond

// Translation is one translated sentence with its attention: Attention[t][i] is the weight of source word i
// when output word t (or the final </s>) was produced. An empty sentence has empty (not null) lists.
type Translation struct {
	Source    []string    `json:"source"`
	Output    []string    `json:"output"`
	Attention [][]float32 `json:"attention"`
	// LogProbs, for a target scored by teacher forcing (ForceTokens), is the log-probability of each output
	// word and of the final </s>.
	LogProbs []float64 `json:"log_probs,omitempty"`
}

// inputLine is one line read by Translate's reader goroutine, or the error that ended the input.
type inputLine struct {
	text string
	err  error
}

// Translate reads sentences and writes one translation per input line (an empty line gives an empty line), in
// order, as it goes: it collects a window of lines — up to a few batches per core, or whatever arrived before
// input paused for req.Pause — translates the window greedily on every core, writes it, and flushes. A
// cancelled ctx stops it between batches with ctx's error; what was translated before stays written. It
// returns the number of sentences written.
func Translate(ctx context.Context, req TranslateRequest) (int, error) {
	if err := req.Decode.Validate(); err != nil {
		return 0, err
	}
	pause := req.Pause
	if pause <= 0 {
		pause = DefaultPause
	}
	// Lines are read on their own goroutine so that a pause in the input can be noticed. When ctx is cancelled
	// the goroutine may stay blocked in a read: the command is about to exit.
	lines := make(chan inputLine, 1024)
	go func() {
		defer close(lines)
		in := data.NewLines(req.Input, req.InputName)
		for in.Scan() {
			lines <- inputLine{text: in.Text()}
		}
		if err := in.Err(); err != nil {
			lines <- inputLine{err: err}
		}
	}()
	tok := data.NewRegexTokenizer(req.Lowercase)
	out := bufio.NewWriter(req.Output)
	var attn *json.Encoder
	if req.Attention != nil {
		attn = json.NewEncoder(req.Attention)
	}
	var links *bufio.Writer
	if req.Alignments != nil {
		links = bufio.NewWriter(req.Alignments)
	}
	// Four batches per core give the length bucketing something to sort, and every core a batch to decode.
	windowSize := req.Decode.Batch * runtime.GOMAXPROCS(0) * 4
	written := 0
	for {
		window, inputErr, more := collectWindow(ctx, lines, windowSize, pause)
		if err := ctx.Err(); err != nil {
			return written, err
		}
		sents := make([][]string, len(window))
		for i, text := range window {
			sents[i] = tok.Tokenize(text)
		}
		trs, err := TranslateTokens(ctx, req.Model, sents, req.Decode)
		if err != nil {
			return written, err
		}
		for _, tr := range trs {
			fmt.Fprintln(out, strings.Join(tr.Output, " "))
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
		if inputErr != nil {
			return written, inputErr
		}
		if !more {
			return written, nil
		}
	}
}

// collectWindow takes lines until it has size of them, the input ends, or no line arrives for pause. more is
// false once the input has ended (cleanly, or with inputErr).
func collectWindow(ctx context.Context, lines <-chan inputLine, size int, pause time.Duration) (window []string, inputErr error, more bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for len(window) < size {
		var wait <-chan time.Time
		if len(window) > 0 {
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

// TranslateTokens translates tokenized sentences greedily, batch by batch on every core, keeping the input
// order. A cancelled ctx stops it between batches with ctx's error.
func TranslateTokens(ctx context.Context, m *model.Seq2Seq[float32], sents [][]string, opts DecodeOptions) ([]Translation, error) {
	out := make([]Translation, len(sents))
	var examples []data.Example
	var index []int // position in sents of each example
	for i, s := range sents {
		if s == nil {
			s = []string{}
		}
		out[i] = Translation{Source: s, Output: []string{}, Attention: [][]float32{}}
		if len(s) == 0 {
			continue
		}
		examples = append(examples, data.Example{Src: m.SrcVocab.Encode(s)})
		index = append(index, i)
	}
	// Batches are independent: decode them on every core, each worker writing only its own sentences, with
	// single-threaded matrix products (two layers of threads on two cores cost 30% here).
	batches := data.MakeBatches(examples, data.BatchOptions{BatchSize: opts.Batch}, nil)
	if threads := backend.BLASThreads(); threads > 1 {
		backend.SetBLASThreads(1)
		defer backend.SetBLASThreads(threads)
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(batches)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bi := range next {
				b := &batches[bi]
				for r, h := range m.Greedy(b, opts.MaxLen) {
					i := index[b.Index[r]]
					out[i] = Translation{Source: sents[i], Output: tokens(m.TgtVocab, h), Attention: h.Attention}
				}
			}
		}()
	}
	for bi := range batches {
		if ctx.Err() != nil {
			break
		}
		next <- bi
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func tokens(v *data.Vocab, h decoder.Hypothesis) []string {
	words := make([]string, len(h.Tokens))
	for i, id := range h.Tokens {
		words[i] = v.Token(id)
	}
	return words
}
