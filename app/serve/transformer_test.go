package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/lexicon"
	"github.com/attend-nmt/attend/model"
)

// TestTransformerServesAsTranslateDoes serves a Transformer (random weights over the test model's vocabularies)
// and checks that its translations and links, in greedy search (the stream) and in beam search, are those
// translate gives, and that /v1/model describes it.
func TestTransformerServesAsTranslateDoes(t *testing.T) {
	path, m, cfg := transformerCheckpoint(t, false)
	lines := readLines(t, "test.src")
	opts := testOptions(t)
	opts.Decode.MaxLen = 12 // an untrained model writes to the limit
	_, hs := newTestServer(t, path, opts)
	for _, beam := range []int{1, 3} {
		t.Run(fmt.Sprintf("beam=%d", beam), func(t *testing.T) {
			decode := opts.Decode
			decode.Beam = beam
			var out, links bytes.Buffer
			if _, err := app.Translate(context.Background(), app.TranslateRequest{Model: m, TextOptions: app.TextOptions{Lowercase: cfg.Data.Lowercase, Decode: decode},
				Input: strings.NewReader(strings.Join(lines, "\n") + "\n"), InputName: "test", Output: &out, Alignments: &links}); err != nil {
				t.Fatal(err)
			}
			want, wantLinks := strings.Split(out.String(), "\n"), strings.Split(links.String(), "\n")
			got := translateOK(t, hs.URL, map[string]any{"texts": lines, "beam": beam, "alignments": true}).Translations
			for i := range lines {
				if got[i].Translation != want[i] || *got[i].Alignments != wantLinks[i] {
					t.Fatalf("line %d %q: served %q (links %q), translate %q (links %q)", i, lines[i], got[i].Translation, *got[i].Alignments, want[i], wantLinks[i])
				}
			}
		})
	}
	resp, err := http.Get(hs.URL + "/v1/model")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), `"attention":"transformer"`) || !strings.Contains(string(raw), "Transformer of 2 blocks") {
		t.Fatalf("GET /v1/model: %d %s %v", resp.StatusCode, raw, err)
	}
}

// transformerCheckpoint saves a Transformer of random weights over the test model's vocabularies, with the test
// model's lexicon when lexicon is set (as a Transformer trained by attend has one), and returns its path.
func transformerCheckpoint(t *testing.T, lexicon bool) (string, *model.Seq2Seq[float32], model.Config) {
	t.Helper()
	ck, err := model.Load(testModel)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ck.Config
	cfg.Model.Type, cfg.Model.DModel, cfg.Model.Heads, cfg.Model.FF, cfg.Model.Layers = model.TypeTransformer, 16, 2, 32, 2
	m, err := model.New[float32](cfg.Model, ck.Model.SrcVocab, ck.Model.TgtVocab)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(rand.New(rand.NewPCG(5, 0)))
	if lexicon {
		if ck.Model.Lexicon == nil {
			t.Fatal("the test model has no lexicon")
		}
		m.Lexicon = ck.Model.Lexicon
	}
	path := filepath.Join(t.TempDir(), "tf.ckpt")
	if err := model.Save(path, cfg, m, model.NewAdam(m.Params, 1e-3), model.Progress{}); err != nil {
		t.Fatal(err)
	}
	return path, m, cfg
}

// TestShortlistTransformerIsRefused: a shortlist cannot search a Transformer (app.DecodeOptions.CheckModel, as
// translate refuses it), so a server given both does not start, and a reload that would swap the model served
// with --shortlist for a Transformer is refused and keeps the old model serving. Greedy and beam requests go on
// being answered, and /healthz says ok.
func TestShortlistTransformerIsRefused(t *testing.T) {
	tf, _, _ := transformerCheckpoint(t, true)
	opts := testOptions(t)
	opts.Decode.Shortlist = &lexicon.ShortlistSize{Frequent: 10, Best: 5}
	if s, err := New(tf, nil, opts); err == nil {
		s.Close()
		t.Fatal("a server of a Transformer with a shortlist started")
	} else if !strings.Contains(err.Error(), "Transformer") || !strings.Contains(err.Error(), "tf.ckpt") {
		t.Fatalf("New: %v", err)
	}

	path := filepath.Join(t.TempDir(), "live.ckpt")
	copyFile(t, testStep1, path)
	opts.Timeout = 20 * time.Second
	s, hs := newTestServer(t, path, opts)
	copyFile(t, tf, path)
	if err := s.Reload(); err == nil || !strings.Contains(err.Error(), "Transformer") || !strings.Contains(err.Error(), "still serving step 30") {
		t.Fatalf("reload of a Transformer with a shortlist: %v", err)
	}
	for _, beam := range []int{1, 3} {
		translateOK(t, hs.URL, map[string]any{"text": "the man saw the cat", "beam": beam})
	}
	resp, err := http.Get(hs.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
}

// TestHealthzFailsWhenRequestsCannotBeServed puts a model that cannot search with the server's settings in
// place behind the checks of New and Reload: /healthz answers 503 naming why, and a greedy request fails at
// once with the decoder's refusal instead of waiting for its timeout (504) while the batcher asks again and
// again; a beam request fails too.
func TestHealthzFailsWhenRequestsCannotBeServed(t *testing.T) {
	_, m, _ := transformerCheckpoint(t, true)
	opts := testOptions(t)
	opts.Decode.Shortlist = &lexicon.ShortlistSize{Frequent: 10, Best: 5}
	opts.Timeout = 20 * time.Second
	s, hs := newTestServer(t, "", opts)
	bad := *s.cur.Load()
	ck := *bad.ck
	ck.Model = m
	bad.ck = &ck
	s.cur.Store(&bad)
	status, _, raw := get(t, hs.URL+"/healthz")
	if status != http.StatusServiceUnavailable || !strings.Contains(string(raw), "Transformer") {
		t.Fatalf("/healthz of a model that cannot serve: %d %s", status, raw)
	}
	for _, beam := range []int{1, 3} {
		start := time.Now()
		status, _, raw := post(t, hs.URL+"/v1/translate", fmt.Sprintf(`{"text": "the man saw the cat", "beam": %d}`, beam))
		if status != http.StatusInternalServerError || !strings.Contains(string(raw), "Transformer") || time.Since(start) > 10*time.Second {
			t.Fatalf("beam %d: %d %s after %v", beam, status, raw, time.Since(start))
		}
	}
	s.Close()
	if status, _, raw := get(t, hs.URL+"/healthz"); status != http.StatusServiceUnavailable || !strings.Contains(string(raw), "shutting down") {
		t.Fatalf("/healthz of a server shutting down: %d %s", status, raw)
	}
}
