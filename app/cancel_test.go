package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// cancelAfter is a Counter that cancels a context once it has been told of n sentences, and notes when.
type cancelAfter struct {
	mu     sync.Mutex
	n      int64
	cancel context.CancelFunc
	at     time.Time
}

func (c *cancelAfter) Add(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n -= n; c.n <= 0 && c.at.IsZero() {
		c.at = time.Now()
		c.cancel()
	}
}

func (c *cancelAfter) when() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// TestTranslateStopsAWideBeamAtOnceAndWritesWhatItFinished is issue #51's case 6: Ctrl-C during a beam search as
// wide as the vocabulary waited for the whole search (37 s) and then threw the finished translations away
// ("interrupted after 0 sentences"). A one-word sentence, whose search ends at its first step (--max-len-ratio
// 1), comes before a long one whose search would take 600 wide steps; the context is cancelled the moment the
// first is done. Translate must return within a step or so with ctx's error, having written the first
// sentence's translation, the same as an uncancelled run writes.
func TestTranslateStopsAWideBeamAtOnceAndWritesWhatItFinished(t *testing.T) {
	t.Run("recurrent", func(t *testing.T) { testStopsAWideBeam(t, tinyTrainConfig().Model) })
	t.Run("transformer", func(t *testing.T) {
		cfg := tinyTrainConfig().Model
		cfg.Type, cfg.DModel, cfg.Heads, cfg.FF, cfg.Layers, cfg.TiedEmbeddings = model.TypeTransformer, 16, 2, 32, 1, true
		testStopsAWideBeam(t, cfg)
	})
}

func testStopsAWideBeam(t *testing.T, cfg model.ModelConfig) {
	const vocab = 2000
	words := make([]string, vocab)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i)
	}
	m, err := model.New[float32](cfg, data.BuildVocab([][]string{words}, 1, 0), data.BuildVocab([][]string{words}, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(51, 6)))
	if m.Transformer != nil {
		// Never </s>: the long sentence's search runs all its 600 steps rather than settling at an empty
		// translation, as this random Transformer's does.
		m.Transformer.OutB.Data[data.EOSID] = -1e4
	}
	long := strings.Join(words[:600], " ")
	decode := DecodeOptions{MaxLen: 600, Batch: 1, Beam: m.TgtVocab.Size(), MaxLenRatio: 1}

	var first bytes.Buffer
	if _, err := Translate(context.Background(), TranslateRequest{TextOptions: TextOptions{Tokenized: true, Decode: decode},
		Model: m, Input: strings.NewReader("w7\n"), InputName: "one", Output: &first}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &cancelAfter{n: 1, cancel: cancel}
	decode.Progress = progress
	var out bytes.Buffer
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := Translate(ctx, TranslateRequest{TextOptions: TextOptions{Tokenized: true, Decode: decode},
			Model: m, Input: strings.NewReader("w7\n" + long + "\n"), InputName: "two", Output: &out})
		done <- result{n, err}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Translate still running 60 s after it started")
	}
	took := time.Since(progress.when())
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Translate = %d, %v; want context.Canceled (the long sentence cannot have finished)", r.n, r.err)
	}
	if r.n != 1 || out.String() != first.String() {
		t.Fatalf("cancelled after the first sentence: %d written, %q; want 1, %q", r.n, out.String(), first.String())
	}
	// Alone it returns within 0.2 s (one wide step at most); the bound leaves room for a loaded machine (6.6 s
	// was seen with a load average of 13), and stays below the 21 s (recurrent) and minutes (Transformer) that
	// the whole search of 600 steps took before.
	t.Logf("returned %v after the cancel", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Fatalf("Translate returned %v after the cancel; want within a wide step (15 s at most)", took.Round(time.Millisecond))
	}
}
