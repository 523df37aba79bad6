package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/app/serve"
)

// watchURL is the watch page's URL a command printed on stderr, or "".
func watchURL(stderr string) string {
	return regexp.MustCompile(`http://127\.0\.0\.1:\d+/watch`).FindString(stderr)
}

// getWatch GETs url and decodes the JSON of the runs into list (when not nil); it returns the status.
func getWatch(t *testing.T, url string, list *serve.WatchList) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if list != nil {
		if err := json.Unmarshal(raw, list); err != nil {
			t.Fatalf("GET %s: %v\n%s", url, err, raw)
		}
	}
	return resp.StatusCode
}

// TestWatchEndToEnd trains a toy model with --watch (its page says where it is on stderr and stops with the
// run), then serves the run's page with `attend watch` until SIGINT: the runs' curves and records are the
// files', and attend serve --watch adds the same page beside the translation page.
func TestWatchEndToEnd(t *testing.T) {
	_, dir, args := trainTiny(t)
	ckpt := filepath.Join(dir, "w.ckpt")
	_, stderr, code := run(t, "", append(args, "--max-steps", "8", "--out", ckpt, "--valid-src", filepath.Join(dir, "valid.src"),
		"--valid-tgt", filepath.Join(dir, "valid.tgt"), "--set", "train.valid_every=4", "--watch")...)
	url := watchURL(stderr)
	if code != 0 || url == "" || !strings.Contains(stderr, "attend train: watch w.ckpt at ") {
		t.Fatalf("exit %d, no watch URL in stderr:\n%s", code, stderr)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("the watch page still answers at %s after the run", url)
	}
	steps, err := app.WatchSteps(app.WatchDir(ckpt))
	if err != nil || len(steps) != 2 {
		t.Fatalf("the run wrote the records of steps %v (%v), want 4 and 8", steps, err)
	}

	cmd, stdout, stderrBuf := startAttend(t, "watch", "--addr", "127.0.0.1:0", ckpt, filepath.Join(t.TempDir(), "later.ckpt"))
	go io.Copy(io.Discard, stdout)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	url = ""
	for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		url = watchURL(stderrBuf.String())
	}
	if url == "" {
		t.Fatalf("attend watch printed no URL:\n%s", stderrBuf.String())
	}
	var list serve.WatchList
	if code := getWatch(t, strings.TrimSuffix(url, "/watch")+"/v1/watch", &list); code != http.StatusOK || len(list.Runs) != 2 {
		t.Fatalf("GET /v1/watch: %d, %d runs", code, len(list.Runs))
	}
	if r := list.Runs[0]; r.Name != "w" || len(r.Steps) != len(steps) || len(r.Curves.ValidPPL) != len(steps) || len(r.Curves.Loss) == 0 {
		t.Errorf("run %+v: want the records of steps %v and a perplexity each", r, steps)
	}
	if code := getWatch(t, url, nil); code != http.StatusOK {
		t.Errorf("GET %s: %d", url, code)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if code := exitCode(t, err); code != 0 {
			t.Errorf("attend watch exited %d after SIGINT, want 0\n%s", code, stderrBuf.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("attend watch still running 20 s after SIGINT")
	}

	s := startServer(t, "--model", ckpt, "--watch", dir)
	if code := getWatch(t, s.url+"/v1/watch", &list); code != http.StatusOK || len(list.Runs) != 2 || list.Runs[0].Name != "m" || list.Runs[1].Name != "w" {
		t.Errorf("serve --watch: GET /v1/watch %d, %+v", code, list)
	}
	if code := getWatch(t, s.url+"/watch", nil); code != http.StatusOK {
		t.Errorf("serve --watch: GET /watch %d", code)
	}
}

func TestWatchRefusesBadArguments(t *testing.T) {
	_, dir, args := trainTiny(t)
	empty := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"watch"}, "requires at least 1 arg"},
		{[]string{"watch", empty}, "no run in the folder"},
		{[]string{"watch", filepath.Join(dir, "train.src")}, "want a checkpoint"},
		{[]string{"watch", "--addr", "127.0.0.1:notaport", filepath.Join(dir, "m.ckpt")}, "watch page:"},
		{[]string{"serve", "--model", filepath.Join(dir, "m.ckpt"), "--watch", empty}, "no run in the folder"},
		{append(args, "--max-steps", "4", "--out", filepath.Join(dir, "x.ckpt"), "--watch=127.0.0.1:notaport"), "watch page:"},
		{[]string{"demo", "--out", filepath.Join(empty, "demo"), "--watch=nohost"}, "missing port"},
	} {
		_, stderr, code := run(t, "", tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("attend %s: exit %d, stderr %q; want an error with %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x.ckpt")); err == nil {
		t.Error("train trained without the page it was asked for")
	}
}
