package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
)

// TestReloadWhileABeamStreamIsBusy reloads the checkpoint of step 60 over that of step 30 while eight clients keep
// the running batch of beam search full: every request is answered 200, each answer is one of the two models'
// translations of its sentence (a sentence decodes with one model from start to end), and requests sent after
// Reload returned get the new model's.
func TestReloadWhileABeamStreamIsBusy(t *testing.T) {
	lines := readLines(t, "test.src")
	opts := testOptions(t)
	want := func(path string) []string { // each line's translation by the model at path, alone
		_, hs := newTestServer(t, path, opts)
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = translateOK(t, hs.URL, map[string]any{"text": l, "beam": 5}).Translations[0].Translation
		}
		return out
	}
	old, cur := want(testStep1), want(testModel)
	differ := 0
	for i := range lines {
		if old[i] != cur[i] {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the models of steps 30 and 60 translate the test sentences alike: the test cannot tell them apart")
	}

	path := t.TempDir() + "/live.ckpt"
	copyFile(t, testStep1, path)
	s, hs := newTestServer(t, path, opts)
	var reloaded time.Time // when Reload returned
	var mu sync.Mutex
	var failures []string
	answered, before, after := 0, 0, 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				l := i % len(lines)
				body, _ := json.Marshal(map[string]any{"text": lines[l], "beam": 5})
				sent := time.Now()
				resp, err := http.Post(hs.URL+"/v1/translate", "application/json", strings.NewReader(string(body)))
				var tr TranslateResponse
				if err == nil {
					if resp.StatusCode == http.StatusOK {
						err = json.NewDecoder(resp.Body).Decode(&tr)
					}
					resp.Body.Close()
				}
				mu.Lock()
				switch {
				case err != nil || resp.StatusCode != http.StatusOK:
					failures = append(failures, "request failed")
				case tr.Translations[0].Translation == old[l] && (reloaded.IsZero() || sent.Before(reloaded) || old[l] == cur[l]):
					before++
				case tr.Translations[0].Translation == cur[l]:
					after++
				default:
					failures = append(failures, "line "+lines[l]+": "+tr.Translations[0].Translation+
						" is neither model's translation ("+old[l]+" | "+cur[l]+"), or the old one's after the reload")
				}
				answered++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	copyFile(t, testModel, path)
	busy := s.inFlight.Load()
	for deadline := time.Now().Add(time.Second); busy == 0 && time.Now().Before(deadline); busy = s.inFlight.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	reloaded = time.Now()
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if busy == 0 {
		t.Fatal("no request was in flight when the model was reloaded")
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed or got a wrong answer around the reload, the first: %s", len(failures), answered, failures[0])
	}
	if before == 0 || after == 0 {
		t.Fatalf("answers of the old model %d, of the new %d: want both", before, after)
	}
	if s.Step() != 60 {
		t.Fatalf("serving step %d after the reload, want 60", s.Step())
	}
	t.Logf("%d requests in flight at the reload; %d answered by the old model, %d by the new", busy, before, after)
}

// TestTakeYieldsOnlyToOtherSettings: a running batch stops taking sentences only when the oldest sentence
// waiting wants other settings, not when the queue is empty (a sentence arriving just after take found it empty
// made the batch drain for nothing, and the sentences behind it wait for its longest).
func TestTakeYieldsOnlyToOtherSettings(t *testing.T) {
	zero := func() float64 { return 0 }
	b := &batcher{limit: 10, metrics: newMetrics(zero, zero, zero), wake: make(chan struct{}, 1)} // no goroutine
	opts := app.DecodeOptions{MaxLen: 5, Batch: 2, Beam: 5}
	greedy := opts
	greedy.Beam = 1
	mk := func(o app.DecodeOptions) *job {
		return &job{ctx: context.Background(), opts: o, done: func(app.Translation, error) {}}
	}
	if jobs, yield := b.takeOrYield(opts, 2); jobs != nil || yield {
		t.Fatalf("an empty queue: took %d, yield %v; want none and no yield", len(jobs), yield)
	}
	b.submit([]*job{mk(greedy), mk(opts)})
	if jobs, yield := b.takeOrYield(opts, 2); jobs != nil || !yield {
		t.Fatalf("greedy waits first: took %d, yield %v; want none and a yield", len(jobs), yield)
	}
	if jobs, yield := b.takeOrYield(greedy, 2); len(jobs) != 1 || yield {
		t.Fatalf("greedy's turn: took %d, yield %v; want its sentence", len(jobs), yield)
	}
	if jobs, yield := b.takeOrYield(opts, 2); len(jobs) != 1 || yield {
		t.Fatalf("beam's turn: took %d, yield %v; want its sentence", len(jobs), yield)
	}
}
