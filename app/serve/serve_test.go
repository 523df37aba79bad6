package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/backend"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/synth"
)

// The model of these tests: a small one trained for a few seconds on the synthetic corpus, once for all tests
// (TestMain), with the checkpoints of steps 30 and 60 kept for reloading.
var (
	testDir   string // the corpus (train.src, test.src, …) and the checkpoints
	testModel string // the checkpoint of step 60
	testStep1 string // the checkpoint of step 30
)

func TestMain(m *testing.M) {
	backend.Select(os.Stderr) // the BLAS attend serve runs on
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "attend-serve")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	testDir = dir
	train, valid, test := synth.Split(300, 20, 30, 3)
	if err := synth.WriteFiles(dir, train, valid, test); err != nil {
		panic(err)
	}
	cfg := app.DemoConfig()
	cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden, cfg.Model.AttnDim = 16, 16, 16, 16
	cfg.Train.MaxSteps, cfg.Train.KeepLast, cfg.Train.LogEvery = 60, 4, 30 // a save per epoch of 10 steps: 30 to 60 kept
	testModel = filepath.Join(dir, "m.ckpt")
	testStep1 = filepath.Join(dir, "m.step-30.ckpt")
	if _, err := app.Train(context.Background(), app.TrainRequest{Config: cfg, Out: testModel, Stdout: io.Discard,
		Train: app.Corpus{Src: filepath.Join(dir, "train.src"), Tgt: filepath.Join(dir, "train.tgt")}}); err != nil {
		panic(err)
	}
	if _, err := os.Stat(testStep1); err != nil {
		steps, _ := model.StepCheckpoints(testModel)
		panic(fmt.Sprintf("training kept no checkpoint of step 30 (%v): %v", steps, err))
	}
	return m.Run()
}

// testOptions are the options of a server of the test model with translate's defaults for it.
func testOptions(t *testing.T) Options {
	t.Helper()
	ck, err := model.Load(testModel)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Decode: app.DecodeOptions{MaxLen: ck.Config.Decode.MaxLen, Batch: ck.Config.Decode.Batch, Beam: 5}}
}

// newTestServer starts a server of the test model (at path, or the test model when path is "") behind an
// httptest server; both stop when the test ends.
func newTestServer(t *testing.T, path string, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if path == "" {
		path = testModel
	}
	var log syncBuffer
	opts.Log = &log
	s, err := New(path, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.handler)
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	return s, hs
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// post sends body to the server's path and returns the status, the headers and the body.
func post(t *testing.T, url, body string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	return answer(t, resp, err)
}

// get fetches the server's path and returns the status, the headers and the body.
func get(t *testing.T, url string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	return answer(t, resp, err)
}

// answer reads the whole of a response (failing t if the request or the read failed) and returns its status,
// headers and body.
func answer(t *testing.T, resp *http.Response, err error) (int, http.Header, []byte) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, raw
}

// translateOK posts a translate request that must succeed and returns its answer.
func translateOK(t *testing.T, url string, req any) TranslateResponse {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	status, _, raw := post(t, url+"/v1/translate", string(body))
	if status != http.StatusOK {
		t.Fatalf("POST /v1/translate %s: %d %s", body, status, raw)
	}
	var resp TranslateResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		t.Fatalf("answer %s: %v", raw, err)
	}
	return resp
}

// readLines reads a file of the test corpus.
func readLines(t *testing.T, name string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	raw, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, raw)
}

func writeFile(t *testing.T, path string, content []byte) {
	t.Helper()
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
}
