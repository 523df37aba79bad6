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

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/model"
)

// TestTransformerServesAsTranslateDoes serves a Transformer (random weights over the test model's vocabularies)
// and checks that its translations and links, in greedy search (the stream) and in beam search, are those
// translate gives, and that /v1/model describes it.
func TestTransformerServesAsTranslateDoes(t *testing.T) {
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
	path := filepath.Join(t.TempDir(), "tf.ckpt")
	if err := model.Save(path, cfg, m, model.NewAdam(m.Params, 1e-3), model.Progress{}); err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, "test.src")
	opts := testOptions(t)
	opts.Decode.MaxLen = 12 // an untrained model writes to the limit
	_, hs := newTestServer(t, path, opts)
	for _, beam := range []int{1, 3} {
		t.Run(fmt.Sprintf("beam=%d", beam), func(t *testing.T) {
			decode := opts.Decode
			decode.Beam = beam
			var out, links bytes.Buffer
			if _, err := app.Translate(context.Background(), app.TranslateRequest{Model: m, Lowercase: cfg.Data.Lowercase,
				Input: strings.NewReader(strings.Join(lines, "\n") + "\n"), InputName: "test", Output: &out, Alignments: &links, Decode: decode}); err != nil {
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
