package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// server is an `attend serve` process.
type server struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	exited chan error
}

// startServer runs `attend serve` on a free port of 127.0.0.1 and waits for the URL it prints.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	cmd, stdout, stderr := startAttend(t, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	s := &server{cmd: cmd, stderr: stderr, exited: make(chan error, 1)}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("serve printed no URL: %v\n%s", err, s.stderr.String())
	}
	go io.Copy(io.Discard, stdout)
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.exited
	})
	m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(line)
	if m == "" {
		t.Fatalf("no URL in %q", line)
	}
	s.url = strings.TrimSuffix(m, "/")
	return s
}

// wait waits for the process to exit and returns its status.
func (s *server) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-s.exited:
		s.exited <- err // for the cleanup
		return exitCode(t, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still running 30 s after the signal\n%s", s.stderr.String())
		return -1
	}
}

// waitInFlight waits until a request other than the one asking is being answered.
func (s *server) waitInFlight(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(s.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(raw, []byte("\nattend_http_requests_in_flight 2\n")) {
			return
		}
	}
	t.Fatalf("no request in flight:\n%s", s.stderr.String())
}

// post posts a request and returns the status and the body.
func (s *server) post(t *testing.T, path string, req any) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post(s.url+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

type served struct {
	Translations []struct {
		Translation string
		NBest       []struct {
			Translation string
			Score       float64
		} `json:"n_best"`
	}
}

// TestServeAnswersAsTranslateDoes runs `attend translate` and `attend serve` on the same checkpoint and test
// file, greedily and with a beam and n-best lists, and requires the server's answers, written as translate writes
// them, to be translate's output byte for byte.
func TestServeAnswersAsTranslateDoes(t *testing.T) {
	ckpt, dir, _ := trainTiny(t)
	lines := append(strings.Split(strings.TrimSpace(string(readBytes(t, filepath.Join(dir, "test.src")))), "\n"),
		"", "The Man, the DOG!", "  a\tb  ")
	input := filepath.Join(dir, "input.txt")
	writeFile(t, input, strings.Join(lines, "\n")+"\n")
	s := startServer(t, "--model", ckpt)
	for _, c := range []struct {
		flags []string
		req   map[string]any
	}{
		{[]string{"--beam", "1"}, map[string]any{"beam": 1}},
		{[]string{"--beam", "4", "--n-best", "3", "--alpha", "0.6"}, map[string]any{"beam": 4, "n_best": 3, "alpha": 0.6}},
	} {
		want, stderr, code := run(t, "", append([]string{"translate", "--model", ckpt, "--input", input}, c.flags...)...)
		if code != 0 {
			t.Fatalf("translate %v: exit %d: %s", c.flags, code, stderr)
		}
		req := map[string]any{"texts": lines}
		for k, v := range c.req {
			req[k] = v
		}
		status, raw := s.post(t, "/v1/translate", req)
		if status != 200 {
			t.Fatalf("%v: %d %s", c.flags, status, raw)
		}
		var resp served
		if err := json.Unmarshal(raw, &resp); err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		for i, tr := range resp.Translations {
			if len(tr.NBest) == 0 {
				fmt.Fprintln(&got, tr.Translation)
			}
			for _, h := range tr.NBest {
				fmt.Fprintf(&got, "%d ||| %s ||| F0= %.6f ||| %.6f\n", i, h.Translation, h.Score, h.Score)
			}
		}
		if got.String() != want {
			t.Fatalf("%v: serve\n%s\ntranslate\n%s", c.flags, got.String(), want)
		}
	}
}

// replaceFile puts content at path atomically, as a training run saves a checkpoint.
func replaceFile(t *testing.T, path string, content []byte) {
	t.Helper()
	tmp := path + ".new"
	writeFile(t, tmp, string(content))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestServeReloadsOnSIGHUPAndStopsOnSIGTERM sends SIGHUP with a broken checkpoint in place (the old model keeps
// serving and the log says why), then with a checkpoint trained further (served from then on), then SIGTERM
// while a request waits in the batcher: the request still gets its answer and serve exits 0. A second serve
// gets two SIGTERMs while a request waits: it quits at once with status 143. The models have an alignment
// attention, whose requests are the ones the batcher holds for --wait (others join the running batch at once).
func TestServeReloadsOnSIGHUPAndStopsOnSIGTERM(t *testing.T) {
	fullContext := []string{"--set", "model.full_context_alignment=true", "--set", "train.guided_alignment=auto"}
	ckpt, dir, args := trainTiny(t, fullContext...)
	args = append(args, fullContext...)
	further := filepath.Join(dir, "further.ckpt")
	for i, a := range args {
		if a == "--out" {
			args[i+1] = further
		}
	}
	if _, stderr, code := run(t, "", append(args, "--max-steps", "12")...); code != 0 {
		t.Fatalf("train further: %s", stderr)
	}
	live := filepath.Join(dir, "live.ckpt")
	replaceFile(t, live, readBytes(t, ckpt))
	s := startServer(t, "--model", live, "--wait", "1500ms")
	step := func() int {
		resp, err := http.Get(s.url + "/v1/model")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info struct{ Step int }
		json.NewDecoder(resp.Body).Decode(&info)
		return info.Step
	}
	waitLog := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if strings.Contains(s.stderr.String(), want) {
				return
			}
		}
		t.Fatalf("the log never said %q:\n%s", want, s.stderr.String())
	}
	if step() != 8 {
		t.Fatalf("serving step %d, want 8", step())
	}
	replaceFile(t, live, []byte("not a checkpoint"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("SIGHUP: reload: ")
	waitLog("still serving step 8")
	if status, raw := s.post(t, "/v1/translate", map[string]any{"text": "a b c", "beam": 1}); status != 200 || step() != 8 {
		t.Fatalf("after a failed reload: %d %s, step %d", status, raw, step())
	}
	replaceFile(t, live, readBytes(t, further))
	s.cmd.Process.Signal(syscall.SIGHUP)
	waitLog("reloaded " + live + " (step 12)")
	if step() != 12 {
		t.Fatalf("after the reload /v1/model says step %d, want 12", step())
	}

	// SIGTERM while a request for the alignment attention gathers for 1.5 s: it is answered, then serve exits 0.
	answered := make(chan int, 1)
	go func() {
		body := strings.NewReader(`{"text": "a b c", "beam": 3, "alignments": true}`)
		resp, err := http.Post(s.url+"/v1/translate", "application/json", body)
		if err != nil {
			answered <- -1
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	s.waitInFlight(t)
	s.cmd.Process.Signal(syscall.SIGTERM)
	if status := <-answered; status != 200 {
		t.Fatalf("the request in flight at SIGTERM got %d\n%s", status, s.stderr.String())
	}
	if code := s.wait(t); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM, want 0\n%s", code, s.stderr.String())
	}
	if log := s.stderr.String(); !strings.Contains(log, "stopping: no new requests") || !strings.Contains(log, "stopped") {
		t.Fatalf("the log does not say it stopped:\n%s", log)
	}

	// A second signal quits at once.
	s = startServer(t, "--model", ckpt, "--wait", "20s")
	go func() {
		resp, err := http.Post(s.url+"/v1/translate", "application/json", strings.NewReader(`{"text": "a b", "beam": 2, "alignments": true}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	s.waitInFlight(t)
	s.cmd.Process.Signal(syscall.SIGTERM)
	waitLog("stopping")
	s.cmd.Process.Signal(syscall.SIGTERM)
	if code := s.wait(t); code != 143 {
		t.Fatalf("serve exited %d after a second SIGTERM, want 143\n%s", code, s.stderr.String())
	}
}
