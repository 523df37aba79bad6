package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
)

// request sends a request with the Host header host (the server's own when "") and Content-Type contentType (none
// when "") and returns the status and the body.
func request(t *testing.T, method, url, host, contentType, body string, header ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, buf.Bytes()
}

// wantJSONError checks an error answer: the status, and a JSON body whose message holds want.
func wantJSONError(t *testing.T, what string, status, wantStatus int, raw []byte, want string) {
	t.Helper()
	var body errorBody
	if err := json.Unmarshal(raw, &body); err != nil || status != wantStatus || body.Status != wantStatus || !strings.Contains(body.Error, want) {
		t.Fatalf("%s: %d %s; want %d and a JSON message with %q", what, status, raw, wantStatus, want)
	}
}

// TestHostHeaderIsChecked: a server answers only requests whose Host names it — for a loopback address the
// localhost names and loopback addresses, with or without a port — and those --allowed-hosts adds; any other
// name (a DNS rebinding page's) gets 403 with a JSON error on every path but /healthz.
func TestHostHeaderIsChecked(t *testing.T) {
	opts := testOptions(t)
	opts.AllowedHosts = "translate.example.org, Proxy.Example.COM:8443"
	_, hs := newTestServer(t, "", opts)
	for _, host := range []string{"localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1", "127.0.0.1:1", "127.1.2.3:80",
		"[::1]", "[::1]:8080", "app.localhost:3000", "translate.example.org", "translate.example.org:443", "proxy.example.com"} {
		if status, _, raw := request(t, "GET", hs.URL+"/v1/model", host, "", ""); status != http.StatusOK {
			t.Fatalf("Host %q: %d %s", host, status, raw)
		}
	}
	translate := `{"text": "the man saw the cat"}`
	for _, host := range []string{"evil.example.com", "evil.example.com:" + strings.TrimPrefix(hs.URL, "http://127.0.0.1:"),
		"localhost.evil.example.com", "127.0.0.1.evil.example.com", "192.0.2.7", "[2001:db8::1]:80", "example.org", "translate.example.org.evil"} {
		for _, path := range []string{"/v1/model", "/", "/page.js", "/metrics", "/v1/nothing"} {
			status, _, raw := request(t, "GET", hs.URL+path, host, "", "")
			wantJSONError(t, "GET "+path+" Host "+host, status, http.StatusForbidden, raw, "does not answer to the host")
		}
		status, _, raw := request(t, "POST", hs.URL+"/v1/translate", host, "application/json", translate)
		wantJSONError(t, "POST Host "+host, status, http.StatusForbidden, raw, "--allowed-hosts")
		status, _, raw = request(t, "OPTIONS", hs.URL+"/v1/translate", host, "", "")
		wantJSONError(t, "OPTIONS Host "+host, status, http.StatusForbidden, raw, "does not answer to the host")
		// A load balancer's probe may send any Host, or none: /healthz holds nothing to protect.
		if status, _, raw := request(t, "GET", hs.URL+"/healthz", host, "", ""); status != http.StatusOK {
			t.Fatalf("/healthz with Host %q: %d %s", host, status, raw)
		}
	}

	// Every interface: any IP address as well; one address: that one only.
	for _, c := range []struct {
		addr       string
		good, bad  []string
		allowedErr string
	}{
		{addr: "0.0.0.0:8080", good: []string{"192.0.2.7:8080", "[2001:db8::1]", "localhost"}, bad: []string{"evil.example.com"}},
		{addr: ":8080", good: []string{"10.0.0.1"}, bad: []string{"evil.example.com:8080"}},
		{addr: "[::]:0", good: []string{"[fe80::1]:1"}, bad: []string{"rebind.example"}},
		{addr: "192.0.2.7:8080", good: []string{"192.0.2.7", "192.0.2.7:8080"}, bad: []string{"localhost", "127.0.0.1", "192.0.2.8", "evil.example.com"}},
		{addr: "localhost:0", good: []string{"localhost", "[::1]"}, bad: []string{"192.0.2.7"}},
	} {
		p, err := newHostPolicy(c.addr, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range c.good {
			if !p.allows(h) {
				t.Fatalf("--addr %s refuses Host %q", c.addr, h)
			}
		}
		for _, h := range c.bad {
			if p.allows(h) {
				t.Fatalf("--addr %s allows Host %q", c.addr, h)
			}
		}
	}
	for _, bad := range []string{"https://translate.example.org", "example.org/path", "a,,b", "exa mple.org", "host:0", "host:http", "*"} {
		if _, err := newHostPolicy("", bad); err == nil || !strings.Contains(err.Error(), "--allowed-hosts") {
			t.Fatalf("--allowed-hosts %q: %v", bad, err)
		}
	}
}

// TestPostsMustBeJSON: a POST whose Content-Type is not application/json (parameters allowed, a charset other
// than UTF-8 not) gets 415 with a JSON error, since a page of any origin may send the others cross-site.
func TestPostsMustBeJSON(t *testing.T) {
	_, hs := newTestServer(t, "", testOptions(t))
	body := `{"text": "the man saw the cat", "beam": 1}`
	for _, ct := range []string{"", "text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded",
		"multipart/form-data; boundary=x", "application/jsonx", "application/json; charset=iso-8859-1", "application/json; =bad", "json"} {
		for _, path := range []string{"/v1/translate", "/v1/heatmap"} {
			status, _, raw := request(t, "POST", hs.URL+path, "", ct, body)
			wantJSONError(t, path+" Content-Type "+ct, status, http.StatusUnsupportedMediaType, raw, "application/json")
		}
	}
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON; Charset=UTF-8", "application/json;charset=utf8"} {
		if status, _, raw := request(t, "POST", hs.URL+"/v1/translate", "", ct, body); status != http.StatusOK {
			t.Fatalf("Content-Type %q: %d %s", ct, status, raw)
		}
	}
}

// TestCORSOrigins: --cors takes *, one origin or a comma-separated list of them, each scheme://host[:port]
// with http or https and nothing more; null and what is not an origin are refused. With several, the answer
// allows the request's origin when it is one of them.
func TestCORSOrigins(t *testing.T) {
	for v, want := range map[string][]string{
		"https://example.org":                          {"https://example.org"},
		"HTTPS://Example.ORG:443":                      {"https://example.org"},
		"http://localhost:3000, https://a.example.org": {"http://localhost:3000", "https://a.example.org"},
		"http://[::1]:8080":                            {"http://[::1]:8080"},
		"http://192.0.2.7:80":                          {"http://192.0.2.7"},
	} {
		p, err := newCORSPolicy(v)
		if err != nil || strings.Join(p.origins, " ") != strings.Join(want, " ") || p.any {
			t.Fatalf("--cors %q: %+v %v; want %v", v, p, err, want)
		}
	}
	if p, err := newCORSPolicy("*"); err != nil || !p.any || p.allowOrigin("https://x.example") != "*" {
		t.Fatalf("--cors *: %+v %v", p, err)
	}
	for v, want := range map[string]string{
		"null":                            "refused",
		"NULL":                            "refused",
		"not a url":                       "no http or https scheme",
		"example.org":                     "no http or https scheme",
		"ftp://example.org":               "no http or https scheme",
		"file:///etc":                     "no http or https scheme",
		"https://":                        "no host",
		"https://example.org/":            "no user, path",
		"https://example.org/app":         "no user, path",
		"https://example.org?x":           "no user, path",
		"https://example.org#x":           "no user, path",
		"https://user@example.org":        "no user, path",
		"https://example.org:0":           "port",
		"https://example.org:99999":       "port",
		"https://example.org:":            "colon",
		"https://exa mple.org":            "not a URL",
		"https://ex_ample!.org":           "not a host name",
		"https://a.example,,https://b.ex": "empty item",
		"*,https://example.org":           "give it alone",
		"https:example.org":               "no host",
	} {
		if _, err := newCORSPolicy(v); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--cors") {
			t.Fatalf("--cors %q: %v; want an error with %q", v, err, want)
		}
		opts := testOptions(t)
		opts.CORS = v
		if s, err := New(testModel, nil, opts); err == nil {
			s.Close()
			t.Fatalf("a server with --cors %q started", v)
		}
	}

	opts := testOptions(t)
	opts.CORS = "https://a.example.org,http://localhost:3000"
	_, hs := newTestServer(t, "", opts)
	for origin, want := range map[string]string{"https://a.example.org": "https://a.example.org", "http://localhost:3000": "http://localhost:3000",
		"https://evil.example.com": "", "null": "", "": ""} {
		_, header, _ := request(t, "OPTIONS", hs.URL+"/v1/translate", "", "", "", "Origin", origin, "Access-Control-Request-Method", "POST")
		if got := header.Get("Access-Control-Allow-Origin"); got != want || header.Get("Vary") != "Origin" {
			t.Fatalf("preflight from %q: Access-Control-Allow-Origin %q, Vary %q; want %q", origin, got, header.Get("Vary"), want)
		}
	}
}

// TestEveryInterfaceWarns: attend serve on every interface (":PORT", "0.0.0.0:PORT") says so on stderr at
// start, and on a loopback address it does not.
func TestEveryInterfaceWarns(t *testing.T) {
	for _, c := range []struct {
		addr string
		warn bool
	}{{"127.0.0.1:0", false}, {"localhost:0", false}, {":0", true}, {"0.0.0.0:0", true}} {
		var stdout, stderr syncBuffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, RunOptions{Streams: app.Streams{Stdout: &stdout, Stderr: &stderr}, Model: testModel,
				Options: Options{Addr: c.addr, MaxBody: DefaultMaxBody, MaxSentences: 1, Queue: 1, Timeout: time.Second}, Search: app.SearchFlags{Beam: 1}})
		}()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(stdout.String(), "attend serve:") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("--addr %s: %v", c.addr, err)
		}
		warned := strings.Contains(stderr.String(), "WARNING: --addr "+c.addr+" listens on EVERY network interface")
		if warned != c.warn || !strings.Contains(stdout.String(), "attend serve:") {
			t.Fatalf("--addr %s: warned %v, want %v; stdout %q, stderr %q", c.addr, warned, c.warn, stdout.String(), stderr.String())
		}
	}
	if err := Run(context.Background(), RunOptions{Model: testModel, Options: Options{Addr: ""}}); err == nil || !strings.Contains(err.Error(), "--addr is empty") {
		t.Fatalf("--addr \"\" (every interface to net.Listen): %v", err)
	}
	for addr, want := range map[string]bool{"[::]:8080": true, "[::1]:8080": false, "192.0.2.7:80": false, "0.0.0.0:1": true, "bad": false} {
		if everyInterface(addr) != want {
			t.Fatalf("everyInterface(%q) is %v", addr, !want)
		}
	}
}

// TestDuplicateKeysAndNULAreRefused: a key given twice in an object (at any depth, regardless of case as the
// decoder matches fields) and a NUL character escaped in a text are refused with 400, as a raw NUL is.
func TestDuplicateKeysAndNULAreRefused(t *testing.T) {
	lim := limits{maxSentences: 5, maxLen: 50}
	for body, want := range map[string]string{
		`{"text": "a", "text": "b"}`:                           `the key "text" is given twice`,
		`{"text": "a", "TEXT": "b"}`:                           `regardless of case`,
		`{"texts": ["a"], "beam": 1, "beam": 32}`:              `the key "beam" is given twice`,
		`{"texts": ["a"], "text\u017f": ["b"]}`:                `is given twice`, // ſ folds to s: "textſ" is texts
		`{"text": "a", "attention": true, "Attention": false}`: `regardless of case`,
		`{"text": "a\u0000b"}`:                                 `text has a NUL character`,
		`{"texts": ["ok", "\u0000"]}`:                          `texts[1] has a NUL character`,
		"{\"text\": \"a\x00b\"}":                               `not valid JSON`,
	} {
		req, err := decodeRequest([]byte(body), lim, false)
		if err == nil || err.Status != http.StatusBadRequest || !strings.Contains(err.Message, want) {
			t.Fatalf("%s: %v %+v; want 400 with %q", body, err, req, want)
		}
	}
	for body, want := range map[string]string{
		`{"a": {"b": 1, "c": {"b": 2, "b": 3}}}`: `"b" is given twice`,
		`[{"x": 1}, {"y": [{"k": 1, "K": 2}]}]`:  `"K" is given twice`,
		`{"a": [1, {"a": 2}], "b": {"a": 3}}`:    ``,
		`[{"a": 1}, {"a": 2}]`:                   ``,
		`{"a": "b", "b": "a", "c": {}}`:          ``,
	} {
		err := checkKeys([]byte(body))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Message, want)) {
			t.Fatalf("%s: %v; want %q", body, err, want)
		}
	}
	if req, err := decodeRequest([]byte(`{"texts": ["a\\u0000", "b"], "beam": 2}`), lim, false); err != nil || req.Texts[0] != `a\u0000` {
		t.Fatalf("an escaped backslash before u0000 is text: %+v %v", req, err)
	}
	// Through the server: a 400 with a JSON error.
	_, hs := newTestServer(t, "", testOptions(t))
	status, _, raw := post(t, hs.URL+"/v1/translate", `{"text": "the cat", "beam": 1, "beam": 2}`)
	wantJSONError(t, "duplicate key", status, http.StatusBadRequest, raw, "given twice")
	status, _, raw = post(t, hs.URL+"/v1/heatmap", `{"text": "the \u0000 cat", "format": "png"}`)
	wantJSONError(t, "NUL", status, http.StatusBadRequest, raw, "NUL character")
}

// TestUnknownPathsShareALabel: requests for paths the API does not have — one not valid UTF-8 among them, which
// the metrics library refuses as a label with a panic — get a JSON 404, and count under one label of the
// metrics, so that a client inventing paths cannot grow them without bound; the log quotes such a path.
func TestUnknownPathsShareALabel(t *testing.T) {
	var log syncBuffer
	opts := testOptions(t)
	opts.Log = &log
	s, err := New(testModel, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s.handler)
	defer hs.Close()
	for _, path := range []string{"/v1/%8a", "/v1/a", "/v1/b%0Aforged%20line", "/v1"} {
		status, _, raw := request(t, "GET", hs.URL+path, "", "", "")
		wantJSONError(t, "GET "+path, status, http.StatusNotFound, raw, "no endpoint")
	}
	_, _, raw := request(t, "GET", hs.URL+"/metrics", "", "", "")
	if n := strings.Count(string(raw), `attend_http_requests_total{code="404",path="/v1/ unknown"} 4`); n != 1 {
		t.Fatalf("the unknown paths are not counted under one label:\n%s", raw)
	}
	if strings.Contains(log.String(), "\nforged line") || !strings.Contains(log.String(), `"/v1/b\nforged line"`) {
		t.Fatalf("the log does not quote a path with a line break:\n%s", log.String())
	}
}
