package serve

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The page is tested in a real browser, Debian's chromium run headless, through chromedp: a Go library that
// speaks the DevTools protocol to a browser it starts itself over a pipe, with no driver binary and without
// ever downloading a browser (rod's launcher fetches one when it finds none), and whose context-and-timeout
// API fits Go tests.

// chromiumPath is the browser to test the page with: $ATTEND_CHROMIUM, or chromium on the PATH.
func chromiumPath() string {
	if p := os.Getenv("ATTEND_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless chromium with a fresh profile, for at most the test's timeout, and returns its
// context. It skips the test when no chromium is installed.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	bin := chromiumPath()
	if bin == "" {
		t.Skip("no chromium on the PATH (nor ATTEND_CHROMIUM): the page's browser test did not run; install chromium (Debian: apt-get install chromium) to run it")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1100, 900),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser, bound to ctx, with no timeout of its own
		t.Fatalf("start %s: %v", bin, err)
	}
	tctx, tcancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(tcancel)
	return tctx
}

// box is an element's place on the screen.
type box struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	W float64 `json:"w"`
	H float64 `json:"h"`
}

// hover moves the mouse onto the middle of the first element sel selects.
func hover(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		b, err := chromedp.Evaluate[box](fmt.Sprintf(`(() => {
			const e = document.querySelector(%q);
			e.scrollIntoView({block: "center", inline: "center"});
			const r = e.getBoundingClientRect();
			return {x: r.x, y: r.y, w: r.width, h: r.height};
		})()`, sel))(ctx, t)
		if err != nil {
			return fmt.Errorf("hover %s: %w", sel, err)
		}
		_, err = chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, b.X+b.W/2, b.Y+b.H/2)(ctx, t)
		return err
	})
}

// lit is what the page shows lit: the inline background of each word of a line, of the heat map's cells of a
// row or column, and the readout.
type lit struct {
	Words   []string `json:"words"`
	Cells   []string `json:"cells"`
	Readout string   `json:"readout"`
	Active  []string `json:"active"`
}

// litState reads the backgrounds of the words of line ("source" or "translation") and of the heat map's
// cells selected by cells.
func litState(line, cells string) chromedp.Action[lit] {
	return chromedp.Evaluate[lit](fmt.Sprintf(`(() => ({
		words: [...document.querySelectorAll("#%s .word")].map(b => b.style.backgroundColor),
		cells: [...document.querySelectorAll(%q)].map(c => c.style.backgroundColor),
		readout: document.getElementById("readout").textContent,
		active: [...document.querySelectorAll(".word.active")].map(b => b.textContent),
	}))()`, line, cells))
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestPageInChromium drives the page in headless chromium: it types a sentence with the keyboard and waits for
// the translation and the heat map (greedy search); points at an output word and checks that the source words
// light up in the colours of that word's row of the heat map, and the reverse for a source word; moves along
// the words with the arrow keys; switches to beam search and waits for the n-best list; downloads the PNG;
// translates several lines into a gallery sorted by attention entropy, both ways; and checks that a phone-wide
// window does not scroll sideways.
func TestPageInChromium(t *testing.T) {
	ctx := newBrowser(t, 90*time.Second)
	_, hs := newTestServer(t, "", testOptions(t))
	downloads := t.TempDir()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}

	do(t, ctx, "load the page",
		chromedp.Navigate(hs.URL),
		chromedp.Poll[chromedp.Void](`document.getElementById("model-info").textContent.includes("step 60")`),
		chromedp.Click(chromedp.CSS("#search-greedy")),
		chromedp.Focus(chromedp.CSS("#text")),
		chromedp.SendKeys(chromedp.CSS("#text"), "the small farmer saw some kings"),
		chromedp.KeyEvent(kb.Enter),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#translation .word").length > 0 && !document.getElementById("result").hidden`),
	)
	shape := run(t, ctx, "read the heat map", chromedp.Evaluate[[]int](`[
		document.querySelectorAll("#source .word").length,
		document.querySelectorAll("#translation .word").length,
		document.querySelectorAll("#heat tbody tr").length,
		document.querySelectorAll("#heat tbody td").length,
		document.getElementById("nbest-section").hidden ? 0 : 1]`))
	src, out, rows, cells, nbest := shape[0], shape[1], shape[2], shape[3], shape[4]
	if src != 6 || out == 0 || rows < out || rows > out+1 || cells != rows*src || nbest != 0 {
		t.Fatalf("after a greedy translation: %d source words, %d output words, %d rows, %d cells, n-best shown %d", src, out, rows, cells, nbest)
	}

	// Point at the first output word: each source word takes the colour of its cell in that word's row.
	do(t, ctx, "hover an output word", hover(`#translation .word[data-index="0"]`))
	got := run(t, ctx, "read the lit words", litState("source", `#heat td[data-row="0"]`))
	if !slices.Equal(got.Words, got.Cells) || !strings.Contains(got.Readout, "looked at") || len(got.Active) != 1 {
		t.Fatalf("pointing at output word 0: source words %q, row 0 of the heat map %q, readout %q, active %q", got.Words, got.Cells, got.Readout, got.Active)
	}
	if slices.IndexFunc(got.Words, func(c string) bool { return c != "" && c != "rgb(255, 255, 255)" }) < 0 {
		t.Fatalf("no source word lit: %q", got.Words)
	}
	// And the reverse: a source word lights the output words with its column.
	do(t, ctx, "hover a source word", hover(`#source .word[data-index="2"]`))
	got = run(t, ctx, "read the lit words", litState("translation", `#heat td[data-col="2"]`))
	if !slices.Equal(got.Words, got.Cells[:out]) || !strings.Contains(got.Readout, "was looked at by") || got.Active[0] != "farmer" {
		t.Fatalf("pointing at source word 2: output words %q, column 2 %q, readout %q, active %q", got.Words, got.Cells, got.Readout, got.Active)
	}
	// A cell lights its row and says its weight.
	do(t, ctx, "hover a cell", hover(`#heat td[data-row="0"][data-col="1"]`))
	got = run(t, ctx, "read the readout", litState("source", `#heat td.cross`))
	if len(got.Cells) != 1 || !strings.Contains(got.Readout, "with weight 0.") {
		t.Fatalf("pointing at a cell: %d crossed cells, readout %q", len(got.Cells), got.Readout)
	}

	// The keyboard alone: focus lights like pointing, the arrow keys move along and across the lines.
	do(t, ctx, "focus a word", chromedp.Focus(chromedp.CSS(`#translation .word[data-index="0"]`)))
	if out > 1 {
		do(t, ctx, "arrow right", chromedp.KeyEvent(kb.ArrowRight))
		got = run(t, ctx, "read the focus", litState("source", `#heat td[data-row="1"]`))
		if !slices.Equal(got.Words, got.Cells) || len(got.Active) != 1 {
			t.Fatalf("after ArrowRight: source words %q, row 1 %q, active %q", got.Words, got.Cells, got.Active)
		}
	}
	do(t, ctx, "arrow down", chromedp.KeyEvent(kb.ArrowDown))
	if kind := run(t, ctx, "read the focus", chromedp.Evaluate[string](`document.activeElement.dataset.kind`)); kind != "src" {
		t.Fatalf("ArrowDown from the translation focused %q, want a source word", kind)
	}

	// Beam search: switching re-translates and shows the n-best list.
	do(t, ctx, "switch to beam search",
		chromedp.Click(chromedp.CSS("#search-beam")),
		chromedp.Poll[chromedp.Void](`!document.getElementById("nbest-section").hidden && document.querySelectorAll("#nbest li").length >= 2`),
	)
	if status := run(t, ctx, "read the status", chromedp.Text(chromedp.CSS("#status"))); !strings.Contains(status, "beam search of width 5") {
		t.Fatalf("status after switching: %q", status)
	}

	// Download the PNG that attend heatmap would write.
	do(t, ctx, "download the PNG", chromedp.Click(chromedp.CSS(`.downloads button[data-format="png"]`)))
	path := filepath.Join(downloads, "attention.png")
	var raw []byte
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			if _, err := png.Decode(bytes.NewReader(b)); err == nil {
				raw = b
				break
			}
		}
	}
	if raw == nil {
		entries, _ := os.ReadDir(downloads)
		t.Fatalf("no PNG downloaded to %s (it holds %v)", downloads, entries)
	}

	// A gallery of several lines, sorted by entropy both ways.
	lines := strings.Join(readLines(t, "test.src")[:6], "\n")
	do(t, ctx, "translate several lines",
		chromedp.SetValue(chromedp.CSS("#lines"), lines),
		chromedp.Click(chromedp.CSS("#gallery-run")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#gallery li").length === 6`),
	)
	entropies := `[...document.querySelectorAll("#gallery .entropy")].map(e => parseFloat(e.textContent.split(" ")[1]))`
	asc := run(t, ctx, "read the gallery", chromedp.Evaluate[[]float64](entropies))
	if !slices.IsSorted(asc) {
		t.Fatalf("gallery entropies %v, want lowest first", asc)
	}
	desc := run(t, ctx, "sort the other way", chromedp.Evaluate[[]float64](`(() => {
		const s = document.getElementById("sort"); s.value = "desc"; s.dispatchEvent(new Event("change"));
		return `+entropies+`; })()`))
	slices.Reverse(desc)
	if !slices.Equal(asc, desc) {
		t.Fatalf("sorted highest first, reversed: %v; lowest first: %v", desc, asc)
	}
	// A card opens its sentence in the main view.
	do(t, ctx, "open a card",
		chromedp.Click(chromedp.CSS("#gallery li:nth-child(2) button")),
		chromedp.Poll[chromedp.Void](`document.getElementById("text").value === document.querySelector("#gallery li:nth-child(2) .src").textContent`),
	)

	// A phone-wide window: nothing scrolls sideways but the heat map inside its own box.
	do(t, ctx, "narrow the window", chromedp.EmulateViewport(360, 740))
	widths := run(t, ctx, "measure", chromedp.Evaluate[[]float64](`[document.documentElement.scrollWidth, window.innerWidth,
		document.querySelector(".heat-scroll").getBoundingClientRect().right]`))
	if widths[0] > widths[1] || widths[2] > widths[1] {
		wide := run(t, ctx, "find what is wide", chromedp.Evaluate[[]string](`[...document.querySelectorAll("body *")].filter(e => e.getBoundingClientRect().right > window.innerWidth).map(e => e.tagName + "." + e.className + "#" + e.id + " " + Math.round(e.getBoundingClientRect().right))`))
		t.Fatalf("at 360 px the page is %v px wide (heat map box ends at %v); wider: %q", widths[0], widths[2], wide)
	}
}

// TestPageScreenshot writes a screenshot of the page to $ATTEND_SCREENSHOT, serving $ATTEND_SCREENSHOT_MODEL,
// with the sentence $ATTEND_SCREENSHOT_TEXT translated by beam search, its third output word pointed at, and
// the lines of the file $ATTEND_SCREENSHOT_LINES (if set) in the gallery, in a window $ATTEND_SCREENSHOT_WIDTH
// pixels wide (default 1100). It is a tool for the documentation,
// skipped unless $ATTEND_SCREENSHOT is set.
func TestPageScreenshot(t *testing.T) {
	out := os.Getenv("ATTEND_SCREENSHOT")
	if out == "" {
		t.Skip("set ATTEND_SCREENSHOT (and ATTEND_SCREENSHOT_MODEL, ATTEND_SCREENSHOT_TEXT) to write a screenshot of the page")
	}
	path, text := os.Getenv("ATTEND_SCREENSHOT_MODEL"), os.Getenv("ATTEND_SCREENSHOT_TEXT")
	if path == "" || text == "" {
		t.Fatal("set ATTEND_SCREENSHOT_MODEL to a checkpoint and ATTEND_SCREENSHOT_TEXT to a sentence")
	}
	ctx := newBrowser(t, 5*time.Minute)
	opts := testOptions(t)
	ck, err := New(path, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	ck.Close()
	opts.Decode.MaxLen, opts.Decode.Batch = ck.cur.Load().ck.Config.Decode.MaxLen, ck.cur.Load().ck.Config.Decode.Batch
	_, hs := newTestServer(t, path, opts)
	width := int64(1100)
	if w, err := strconv.Atoi(os.Getenv("ATTEND_SCREENSHOT_WIDTH")); err == nil && w > 0 {
		width = int64(w)
	}
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.EmulateViewport(width, 1400),
		chromedp.Navigate(hs.URL),
		chromedp.Poll[chromedp.Void](`document.getElementById("model-info").textContent.startsWith("Model")`),
	}
	if lines := os.Getenv("ATTEND_SCREENSHOT_LINES"); lines != "" {
		raw, err := os.ReadFile(lines)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(strings.TrimSpace(string(raw)), "\n") + 1
		steps = append(steps, chromedp.SetValue(chromedp.CSS("#lines"), string(raw)), chromedp.Click(chromedp.CSS("#gallery-run")),
			chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.querySelectorAll("#gallery li").length === %d`, n), chromedp.WithPollingTimeout(4*time.Minute)))
	}
	steps = append(steps,
		chromedp.SendKeys(chromedp.CSS("#text"), text),
		chromedp.Click(chromedp.CSS("#translate")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#nbest li").length > 1`),
		chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`),
		hover(`#translation .word[data-index="2"]`),
	)
	do(t, ctx, "show a sentence", steps...)
	shot := run(t, ctx, "take the screenshot", chromedp.FullScreenshot(100))
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
}
