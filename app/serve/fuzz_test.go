package serve

import (
	"net/http"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest feeds arbitrary bodies to the request decoder: it must never panic, must answer every
// body it refuses with a 400, 413 or 422 and a message, and everything it accepts must be valid UTF-8 with one
// of text and texts, settings in range, and at most the sentences allowed.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"text": "ein Hund läuft."}`,
		`{"texts": ["a", "b"], "beam": 4, "n_best": 2, "alpha": 0.6, "max_len": 20, "attention": true, "alignments": true, "threshold": 0.3}`,
		`{"text": "x", "format": "png"}`,
		`{"text": null}`, `{"texts": []}`, `[]`, `"text"`, `{"beam": 1e400}`, `{"text": "a"} x`, "{\"text\": \"\xc3\"}",
		`{"text": "\ud800"}`, `{"texts": [null, "a"]}`, `{"TEXT": "case"}`, `{"text": "a", "text": "b"}`,
	} {
		f.Add([]byte(seed), false)
		f.Add([]byte(seed), true)
	}
	lim := limits{maxSentences: 5, maxLen: 50}
	f.Fuzz(func(t *testing.T, body []byte, heatmap bool) {
		req, err := decodeRequest(body, lim, heatmap)
		if err != nil {
			switch err.Status {
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("status %d for %q", err.Status, body)
			}
			if err.Message == "" || req != nil {
				t.Fatalf("refusal without a message, or with a request: %+v %v", err, req)
			}
			return
		}
		if !utf8.Valid(body) {
			t.Fatalf("accepted invalid UTF-8 %q", body)
		}
		if (req.Text == nil) == (req.Texts == nil) || len(req.Texts) > lim.maxSentences || heatmap && req.Text == nil {
			t.Fatalf("accepted %q as %+v", body, req)
		}
		if req.Beam != nil && (*req.Beam < 1 || *req.Beam > MaxBeam) || req.NBest != nil && (*req.NBest < 0 || *req.NBest > MaxBeam) ||
			req.MaxLen != nil && (*req.MaxLen < 1 || *req.MaxLen > lim.maxLen) || req.Alpha != nil && !(*req.Alpha >= 0 && *req.Alpha <= 10) ||
			req.Threshold != nil && !(*req.Threshold >= 0 && *req.Threshold <= 1) {
			t.Fatalf("accepted settings out of range: %q", body)
		}
		for _, s := range req.sentences() {
			if !utf8.ValidString(s) {
				t.Fatalf("a sentence is not UTF-8: %q", s)
			}
		}
	})
}
