package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/attend-nmt/attend/decoder"
)

// MaxBeam is the widest beam a request may ask for.
const MaxBeam = 32

// TranslateRequest is the body of POST /v1/translate (and of POST /v1/heatmap, which also takes Format): one
// sentence in Text or several in Texts, and the search settings, each defaulting to the server's.
type TranslateRequest struct {
	Text  *string  `json:"text,omitempty"`
	Texts []string `json:"texts,omitempty"`
	// Beam is the beam width, 1 for greedy search; NBest > 0 returns that many hypotheses with their scores;
	// Alpha weighs GNMT's length penalty; MaxLen caps the translation in tokens.
	Beam   *int     `json:"beam,omitempty"`
	NBest  *int     `json:"n_best,omitempty"`
	Alpha  *float64 `json:"alpha,omitempty"`
	MaxLen *int     `json:"max_len,omitempty"`
	// Attention returns each sentence's attention between the white-space words of its input and of its
	// translation, and between tokens as `attend heatmap` draws it.
	Attention bool `json:"attention,omitempty"`
	// Alignments returns each sentence's links between the white-space words of its input and of its
	// translation (Pharaoh "i-j", 0-based, source first): by the argmax of each output token's attention or, with
	// Threshold > 0, every weight at or above it.
	Alignments bool     `json:"alignments,omitempty"`
	Threshold  *float64 `json:"threshold,omitempty"`
	// Format is the picture or matrix /v1/heatmap returns: png, svg or json.
	Format string `json:"format,omitempty"`
}

// apiError is an error answered to a client: its HTTP status and a message a person can act on.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

func errorf(status int, format string, args ...any) *apiError {
	return &apiError{Status: status, Message: fmt.Sprintf(format, args...)}
}

// requestFields lists the fields of a request for messages.
const requestFields = "text, texts, beam, n_best, alpha, max_len, attention, alignments, threshold"

// limits are what a request may ask for.
type limits struct {
	maxSentences int
	maxLen       int // the longest translation a request may ask for, in tokens
}

// decodeRequest reads a request body: invalid UTF-8 is 422, malformed JSON, a field of the wrong type, an
// unknown field, a key given twice, a NUL character, no text or both text and texts, or a setting out of range
// is 400, and more sentences than the limit 413. heatmap requests take one text and a format.
func decodeRequest(body []byte, lim limits, heatmap bool) (*TranslateRequest, *apiError) {
	if !utf8.Valid(body) {
		off := 0
		for off < len(body) {
			r, size := utf8.DecodeRune(body[off:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			off += size
		}
		return nil, errorf(http.StatusUnprocessableEntity, "the request body is not valid UTF-8 (byte %#02x at offset %d); send the text as UTF-8", body[off], off)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req TranslateRequest
	if err := dec.Decode(&req); err != nil {
		return nil, jsonError(err, body)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errorf(http.StatusBadRequest, "the request body has more after its JSON object; send one object such as {\"text\": \"ein Hund läuft.\"}")
	}
	if err := checkKeys(body); err != nil {
		return nil, err
	}
	if err := req.checkNUL(); err != nil {
		return nil, err
	}
	if err := req.check(lim, heatmap); err != nil {
		return nil, err
	}
	return &req, nil
}

// jsonError turns a JSON decoding error into a message that names the field or the place.
func jsonError(err error, body []byte) *apiError {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errorf(http.StatusBadRequest, "the request body is empty; send a JSON object such as {\"text\": \"ein Hund läuft.\"}")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errorf(http.StatusBadRequest, "the request body ends in the middle of its JSON (%d bytes)", len(body))
	case errors.As(err, &syntax):
		line := 1 + bytes.Count(body[:min(int(syntax.Offset), len(body))], []byte("\n"))
		return errorf(http.StatusBadRequest, "the request body is not valid JSON: %v (line %d, byte %d)", syntax, line, syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field == "" {
			return errorf(http.StatusBadRequest, "the request body must be a JSON object with the fields %s, not a JSON %s", requestFields, typ.Value)
		}
		return errorf(http.StatusBadRequest, "field %q must be %s, not a JSON %s", typ.Field, describeType(typ.Field), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return errorf(http.StatusBadRequest, "%s in the request; the fields are %s, and format for /v1/heatmap",
			strings.TrimPrefix(err.Error(), "json: "), requestFields)
	}
	return errorf(http.StatusBadRequest, "the request body is not a valid request: %v", err)
}

// describeType says what a field must be.
func describeType(field string) string {
	switch field {
	case "text", "format":
		return "a string"
	case "texts":
		return "an array of strings"
	case "beam", "n_best", "max_len":
		return "a whole number"
	case "alpha", "threshold":
		return "a number"
	case "attention", "alignments":
		return "true or false"
	}
	if strings.HasPrefix(field, "texts") {
		return "a string"
	}
	return "of another type"
}

// check reports a request whose settings are out of range.
func (req *TranslateRequest) check(lim limits, heatmap bool) *apiError {
	switch {
	case req.Text == nil && req.Texts == nil:
		return errorf(http.StatusBadRequest, "the request has no text; send {\"text\": \"...\"} or {\"texts\": [\"...\", ...]}")
	case req.Text != nil && req.Texts != nil:
		return errorf(http.StatusBadRequest, "the request has both text and texts; send one of them")
	case heatmap && req.Text == nil:
		return errorf(http.StatusBadRequest, "a heat map is of one sentence: send it as text, not texts")
	case heatmap && req.Format != "png" && req.Format != "svg" && req.Format != "json":
		return errorf(http.StatusBadRequest, "format is %q; want png, svg or json", req.Format)
	case !heatmap && req.Format != "":
		return errorf(http.StatusBadRequest, "format is for /v1/heatmap; /v1/translate returns JSON")
	case len(req.Texts) > lim.maxSentences:
		return errorf(http.StatusRequestEntityTooLarge, "the request has %d sentences; this server takes at most %d per request, send them in several requests", len(req.Texts), lim.maxSentences)
	case req.Beam != nil && (*req.Beam < 1 || *req.Beam > MaxBeam):
		return errorf(http.StatusBadRequest, "beam is %d; want 1 (greedy search) to %d", *req.Beam, MaxBeam)
	case req.NBest != nil && (*req.NBest < 0 || *req.NBest > MaxBeam):
		return errorf(http.StatusBadRequest, "n_best is %d; want 0 (just the best translation) to the beam width", *req.NBest)
	case req.Alpha != nil && !decoder.AlphaRange().Contains(*req.Alpha): // the range of --alpha and decode.alpha
		return errorf(http.StatusBadRequest, "%v", decoder.AlphaRange().Check("alpha", *req.Alpha))
	case req.MaxLen != nil && (*req.MaxLen < 1 || *req.MaxLen > lim.maxLen):
		return errorf(http.StatusBadRequest, "max_len is %d; want 1 to %d tokens", *req.MaxLen, lim.maxLen)
	case req.Threshold != nil && !(*req.Threshold >= 0 && *req.Threshold <= 1):
		return errorf(http.StatusBadRequest, "threshold is %v; want a weight from 0 (argmax) to 1", *req.Threshold)
	}
	return nil
}

// checkNUL refuses (400) a NUL character in a text of the request, which JSON allows escaped (\u0000) where
// it refuses it raw: no text holds one. (A format holding one is refused as any other unknown format.)
func (req *TranslateRequest) checkNUL() *apiError {
	for i, s := range req.sentences() {
		if j := strings.IndexByte(s, 0); j >= 0 {
			which := "text"
			if req.Texts != nil {
				which = fmt.Sprintf("texts[%d]", i)
			}
			return errorf(http.StatusBadRequest, "%s has a NUL character (\\u0000) at byte %d; send text without it", which, j)
		}
	}
	return nil
}

// sentences are the request's texts.
func (req *TranslateRequest) sentences() []string {
	if req.Text != nil {
		return []string{*req.Text}
	}
	return req.Texts
}
