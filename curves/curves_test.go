package curves

import (
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
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
