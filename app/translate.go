package app

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

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
	MaxLen    int
	Batch     int
}

// Translation is one translated sentence with its attention: Attention[t][i] is the weight of source word i
// when output word t (or the final </s>) was produced.
type Translation struct {
	Source    []string    `json:"source"`
	Output    []string    `json:"output"`
	Attention [][]float32 `json:"attention"`
}

// Translate reads sentences, translates them greedily in batches and writes one line per input line (an empty
// input line gives an empty output line).
func Translate(req TranslateRequest) (int, error) {
	sents, err := data.ReadLines(req.Input, req.InputName, data.NewRegexTokenizer(req.Lowercase))
	if err != nil {
		return 0, err
	}
	out, err := TranslateTokens(req.Model, sents, req.MaxLen, req.Batch)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriter(req.Output)
	var aw *json.Encoder
	if req.Attention != nil {
		aw = json.NewEncoder(req.Attention)
	}
	for _, tr := range out {
		fmt.Fprintln(w, strings.Join(tr.Output, " "))
		if aw != nil {
			if err := aw.Encode(tr); err != nil {
				return 0, fmt.Errorf("write attention: %w", err)
			}
		}
	}
	return len(out), w.Flush()
}

// TranslateTokens translates tokenized sentences greedily, batch by batch, keeping the input order.
func TranslateTokens(m *model.Seq2Seq[float32], sents [][]string, maxLen, batch int) ([]Translation, error) {
	out := make([]Translation, len(sents))
	var examples []data.Example
	var index []int // position in sents of each example
	for i, s := range sents {
		out[i].Source = s
		if len(s) == 0 {
			continue
		}
		examples = append(examples, data.Example{Src: m.SrcVocab.Encode(s)})
		index = append(index, i)
	}
	// Batches are independent: decode them on every core, each worker writing only its own sentences, with
	// single-threaded matrix products (two layers of threads on two cores cost 30% here).
	batches := data.MakeBatches(examples, data.BatchOptions{BatchSize: batch}, nil)
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
				for r, h := range m.Greedy(b, maxLen) {
					i := index[b.Index[r]]
					out[i] = Translation{Source: sents[i], Output: tokens(m.TgtVocab, h), Attention: h.Attention}
				}
			}
		}()
	}
	for bi := range batches {
		next <- bi
	}
	close(next)
	wg.Wait()
	return out, nil
}

func tokens(v *data.Vocab, h decoder.Hypothesis) []string {
	words := make([]string, len(h.Tokens))
	for i, id := range h.Tokens {
		words[i] = v.Token(id)
	}
	return words
}
