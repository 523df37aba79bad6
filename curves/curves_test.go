package curves

import (
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const testLog = `{"event":"step","step":50,"epoch":1,"loss":5.5,"tok_per_s":900,"tgt_tokens":1000}
{"event":"step","step":100,"epoch":1,"loss":4.25,"tok_per_s":1000,"tgt_tokens":1000}
{"event":"valid","step":100,"epoch":1,"valid_loss":3.5,"valid_ppl":33.1}
{"event":"resume","step":100}

{"event":"step","step":150,"epoch":2,"loss":3.75,"tok_per_s":950,"tgt_tokens":1000}
`

func TestReadTakesStepsAndValidations(t *testing.T) {
	c, err := Read(strings.NewReader(testLog), "run.metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Loss) != 3 || c.Loss[1].X != 100 || c.Loss[2].Y != 3.75 {
		t.Errorf("loss %v", c.Loss)
	}
	if len(c.ValidPPL) != 1 || c.ValidPPL[0].X != 100 || c.ValidPPL[0].Y != 33.1 {
		t.Errorf("valid ppl %v", c.ValidPPL)
	}
	if len(c.TokPerS) != 3 || c.TokPerS[0].Y != 900 {
		t.Errorf("tok/s %v", c.TokPerS)
	}
}

func TestReadTakesBLEUAndAERWhereTheLogHasThem(t *testing.T) {
	log := testLog + `{"event":"valid","step":150,"epoch":2,"valid_ppl":30,"valid_bleu":12.5,"valid_aer":0.25}` + "\n"
	c, err := Read(strings.NewReader(log), "run.metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ValidPPL) != 2 || len(c.ValidBLEU) != 1 || c.ValidBLEU[0].X != 150 || c.ValidBLEU[0].Y != 12.5 ||
		len(c.ValidAER) != 1 || c.ValidAER[0].Y != 0.25 {
		t.Errorf("ppl %v, BLEU %v, AER %v", c.ValidPPL, c.ValidBLEU, c.ValidAER)
	}
}

func TestReadNamesFileAndLine(t *testing.T) {
	for _, tt := range []struct {
		name, log, want string
	}{
		{"bad JSON", testLog[:strings.Index(testLog, "\n")+1] + "{\"event\": \n", "run.jsonl line 2"},
		{"step without loss", "{\"event\":\"step\",\"step\":1,\"tok_per_s\":3}\n", "run.jsonl line 1"},
		{"valid without ppl", testLog + "{\"event\":\"valid\",\"step\":1}\n", "run.jsonl line 7"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.log), "run.jsonl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %s", err, tt.want)
			}
		})
	}
	if _, err := Read(strings.NewReader(`{"event":"valid","step":1,"valid_ppl":3}`+"\n"), "v.jsonl"); !errors.Is(err, ErrNoSteps) {
		t.Errorf("log without steps: %v", err)
	}
}

func TestWriteDrawsPNGAndSVG(t *testing.T) {
	c, err := Read(strings.NewReader(testLog), "run")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pngPath, svgPath := filepath.Join(dir, "c.png"), filepath.Join(dir, "c.svg")
	for _, p := range []string{pngPath, svgPath} {
		if err := Write(p, "run", c); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != int(math.Round(width.Dots(pngDPI))) || b.Dy() != int(math.Round((3*panelHeight).Dots(pngDPI))) {
		t.Errorf("PNG is %v", b.Size())
	}
	svg, _ := os.Open(svgPath)
	defer svg.Close()
	dec := xml.NewDecoder(svg)
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("SVG is not XML: %v", err)
		}
	}
	if err := Write(filepath.Join(dir, "c.gif"), "run", c); !errors.Is(err, ErrFormat) {
		t.Errorf("gif: %v", err)
	}
}

// TestTickLabelsAreDistinctAndPlain: plot.DefaultTicks labels 1.04–1.12 "1 1.1 1.1" and 50–17500 "2500.00
// 10000.00 17500.00"; Ticks writes each major tick's value exactly with as few decimals as all of them need.
func TestTickLabelsAreDistinctAndPlain(t *testing.T) {
	for _, tt := range []struct {
		min, max float64
		want     string
	}{
		{1.04, 1.12, "1.04 1.08 1.12"},
		{1.08, 1.11, "1.08 1.09 1.10 1.11"},
		{50, 17500, "2500 10000 17500"},
		{4.2, 4.3, "4.20 4.25 4.30"},
		{5.4, 33, "10 20 30"},
	} {
		var labels []string
		for _, tk := range (Ticks{}).Ticks(tt.min, tt.max) {
			if tk.IsMinor() {
				continue
			}
			labels = append(labels, tk.Label)
			if v, err := strconv.ParseFloat(tk.Label, 64); err != nil || math.Abs(v-tk.Value) > 1e-9 {
				t.Errorf("%g–%g: tick at %g labelled %q", tt.min, tt.max, tk.Value, tk.Label)
			}
		}
		if got := strings.Join(labels, " "); got != tt.want {
			t.Errorf("%g–%g: labels %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

// TestPanelsShareTheStepAxis: the validations start at step 100 and the speed panel's points differ, yet every
// panel spans steps 50 to 150, and only the lowest labels its ticks.
func TestPanelsShareTheStepAxis(t *testing.T) {
	c, err := Read(strings.NewReader(testLog), "run")
	if err != nil {
		t.Fatal(err)
	}
	plots, err := c.panels("run")
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range plots {
		if p.X.Min != 50 || p.X.Max != 150 {
			t.Errorf("panel %d spans steps %g to %g, want 50 to 150", i, p.X.Min, p.X.Max)
		}
		_, _, _, a := p.X.Tick.Label.Color.RGBA()
		if shown := a != 0; shown != (i == len(plots)-1) {
			t.Errorf("panel %d: tick labels shown %v", i, shown)
		}
	}
}

func TestTitleSaysTheRun(t *testing.T) {
	c, err := Read(strings.NewReader(testLog), "run")
	if err != nil {
		t.Fatal(err)
	}
	// testLog is an old log, without epochs_done: its last step is in epoch 2.
	if got, want := c.Title("m30k"), "m30k: 150 steps (in epoch 2); best validation perplexity 33.10 at step 100"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	// An old log whose last step is validated: that record's epoch is the number of epochs done.
	old := testLog + `{"event":"valid","step":150,"epoch":2,"valid_ppl":30}` + "\n"
	if c, err = Read(strings.NewReader(old), "run"); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Title("m30k"), "m30k: 150 steps, 2 epochs; best validation perplexity 30.00 at step 150"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	done := testLog + `{"event":"step","step":200,"epoch":2,"epochs_done":2,"loss":3.5,"tok_per_s":950}` + "\n" +
		`{"event":"valid","step":200,"epoch":2,"epochs_done":2,"valid_ppl":20.5}` + "\n"
	if c, err = Read(strings.NewReader(done), "run"); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Title("m30k"), "m30k: 200 steps, 2 epochs; best validation perplexity 20.50 at step 200"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	for path, want := range map[string]string{"ck/m30k.metrics.jsonl": "m30k", "log.jsonl": "log", "a.b.metrics.jsonl": "a.b"} {
		if got := RunName(path); got != want {
			t.Errorf("RunName(%s) = %q, want %q", path, got, want)
		}
	}
}
