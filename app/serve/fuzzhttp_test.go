package serve

import (
	"encoding/json"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/model"
)

// FuzzServeRequest sends arbitrary requests through the server's handler — the Host header, the Content-Type,
// the JSON body, the path — with the test model behind it: it must never panic or answer 500, every refusal
// must be a JSON error with a message, a Host that is not a name of the server (a loopback address, with
// translate.example.org allowed) must get 403 on every path but /healthz, a body not declared
// application/json 415, and an answer of translations must be of a body whose texts hold no NUL and whose keys
// are each given once.
func FuzzServeRequest(f *testing.F) {
	for _, seed := range []struct {
		path, host, contentType, body string
	}{
		{"/v1/translate", "127.0.0.1:8080", "application/json", `{"text": "the man saw the cat", "beam": 1}`},
		{"/v1/translate", "localhost", "application/json; charset=utf-8", `{"texts": ["a cat", "the dog"], "beam": 2, "n_best": 2, "attention": true, "alignments": true, "threshold": 0.3}`},
		{"/v1/heatmap", "[::1]:80", "application/json", `{"text": "the cat", "format": "svg", "beam": 1}`},
		{"/v1/translate", "evil.example.com", "application/json", `{"text": "a"}`},
		{"/v1/translate", "translate.example.org:443", "text/plain", `{"text": "a"}`},
		{"/v1/translate", "127.0.0.1", "application/x-www-form-urlencoded", `text=a`},
		{"/v1/translate", "localhost.", "", `{"text": "a"}`},
		{"/v1/translate", "app.localhost", "Application/JSON; charset=latin1", `{"text": "a"}`},
		{"/v1/translate", "127.0.0.1", "application/json", `{"text": "a", "text": "b"}`},
		{"/v1/translate", "127.0.0.1", "application/json", `{"text": "a", "TEXT": "b"}`},
		{"/v1/translate", "127.0.0.1", "application/json", `{"text": "a\u0000b", "beam": 1}`},
		{"/v1/translate", "127.0.0.1", "application/json", `{"texts": ["a\\u0000", "b"], "beam": 1}`},
		{"/v1/translate", "127.0.0.1", "application/json", `{"texts": ["a"], "text\u017f": ["b"]}`},
		{"/v1/model", "127.0.0.1.evil.example.com", "", ``},
		{"/healthz", "", "", ``},
		{"/", "192.0.2.7", "", ``},
		{"/metrics", "[2001:db8::1]:8080", "", ``},
		{"/v1/translate", "", "application/json", `{"text": "a"}`},
		{"/v1/translate", "localhost", "application/json;", `{"text": "a", "beam": 1}`},
		{"/v1/translate", "localhost", "application/json; charset=\"utf-8\"; x=y", `{"text": "a", "beam": 1}`},
	} {
		f.Add(seed.path, seed.host, seed.contentType, []byte(seed.body))
	}
	ck, err := model.Load(testModel)
	if err != nil {
		f.Fatal(err)
	}
	// Short translations (max_len 8) and few sentences: the fuzzer tries many.
	opts := Options{Decode: app.DecodeOptions{MaxLen: 8, Batch: ck.Config.Decode.Batch, Beam: 1}, MaxBody: 2048, MaxSentences: 3,
		Queue: 64, Timeout: 10 * time.Second, AllowedHosts: "translate.example.org"}
	s, err := New(testModel, ck, opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(s.Close)
	handler := s.handler
	f.Fuzz(func(t *testing.T, path, host, contentType string, body []byte) {
		if path == "" || path[0] != '/' {
			path = "/" + path
		}
		method := http.MethodPost
		if !strings.HasPrefix(path, "/v1/translate") && !strings.HasPrefix(path, "/v1/heatmap") {
			method = http.MethodGet
		}
		req := httptest.NewRequest(method, "http://127.0.0.1/", strings.NewReader(string(body)))
		req.URL.Path, req.Host = path, host
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		status := rec.Code
		if status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusGatewayTimeout {
			t.Fatalf("%s %s Host %q Content-Type %q %q: %d %s", method, path, host, contentType, body, status, rec.Body.Bytes())
		}
		if status >= 400 {
			var e errorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Status != status || e.Error == "" {
				t.Fatalf("%s %s: %d with the body %q, not a JSON error", method, path, status, rec.Body.Bytes())
			}
		}
		if path != "/healthz" && status != http.StatusForbidden && !fuzzServerName(host) {
			t.Fatalf("%s %s answered %d to Host %q", method, path, status, host)
		}
		if path == "/healthz" && status == http.StatusForbidden {
			t.Fatalf("/healthz refused Host %q", host)
		}
		if status != http.StatusOK || method != http.MethodPost {
			return
		}
		if media, _, err := mime.ParseMediaType(contentType); err != nil || media != "application/json" {
			t.Fatalf("answered a body of Content-Type %q", contentType)
		}
		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatalf("answered %q, which is not a JSON object: %v", body, err)
		}
		for _, v := range fields {
			for _, s := range fuzzStrings(v) {
				if strings.ContainsRune(s, 0) {
					t.Fatalf("answered %q, whose texts hold a NUL", body)
				}
			}
		}
		if n := fuzzTopLevelKeys(body); n != len(fields) {
			t.Fatalf("answered %q, which has %d keys but %d distinct ones", body, n, len(fields))
		}
	})
}

// fuzzServerName is the test's own reading of the names FuzzServeRequest's server answers to: localhost names,
// loopback IP addresses and translate.example.org, with or without a port.
func fuzzServerName(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost" || strings.HasSuffix(host, ".localhost") || host == "translate.example.org"
}

// fuzzStrings are the strings of a decoded JSON value.
func fuzzStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var all []string
		for _, e := range v {
			all = append(all, fuzzStrings(e)...)
		}
		return all
	}
	return nil
}

// fuzzTopLevelKeys counts the keys of a JSON object as written, each time it is given: more than the map
// Unmarshal fills has when a key is given twice as the same string (-1 when body is not an object).
func fuzzTopLevelKeys(body []byte) int {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return -1
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	depth, n, wantKey := 0, 0, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return n
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			wantKey = tok == json.Delim('{') && depth == 1
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			wantKey = depth == 1
			continue
		}
		if depth == 1 && wantKey {
			n++
			wantKey = false
		} else if depth == 1 {
			wantKey = true
		}
	}
}
