// Package curves reads a training run's curves from its metrics log (training loss, validation perplexity,
// BLEU and AER, training speed against the optimizer step) and draws them.
package curves

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
)

// ErrNoSteps is the cause of a Read error for a log without a single training step.
var ErrNoSteps = errors.New("no training steps in the metrics log")

// ErrFormat is the cause of a Write error for a path whose extension is neither .png nor .svg.
var ErrFormat = errors.New("unknown picture format (want .png or .svg)")

// Curves are the series of one run, each as (step, value) points in log order.
type Curves struct {
	Loss     plotter.XYs // mean training loss per logged interval
	ValidPPL plotter.XYs // validation perplexity
	// ValidBLEU and ValidAER are the validations' BLEU (train.valid_bleu) and the AER of their attention
	// (--valid-gold), empty when the run had none.
	ValidBLEU, ValidAER plotter.XYs
	TokPerS             plotter.XYs // training target tokens per second
	// Epoch is the epoch (from 1) of the last step record, and EpochsDone the epochs complete after it; -1 when
	// a log written before records had "epochs_done" does not say (it does when a validation of that step
	// follows, whose "epoch" then counted the completed epochs).
	Epoch, EpochsDone int
}

// record is one line of the metrics log written by attend train: event "step" or "valid".
type record struct {
	Event      string   `json:"event"`
	Step       *float64 `json:"step"`
	Epoch      *int     `json:"epoch"`
	EpochsDone *int     `json:"epochs_done"`
	Loss       *float64 `json:"loss"`
	TokPerS    *float64 `json:"tok_per_s"`
	ValidPPL   *float64 `json:"valid_ppl"`
	ValidBLEU  *float64 `json:"valid_bleu"`
	ValidAER   *float64 `json:"valid_aer"`
}

// Read reads a metrics log (one JSON object per line, as attend train writes it); name is used in errors,
// which name the line. Events other than "step" and "valid" are skipped; a log with no step is an error
// wrapping ErrNoSteps.
func Read(r io.Reader, name string) (*Curves, error) {
	c := &Curves{}
	lines := data.NewLines(r, name)
	for lines.Scan() {
		line := lines.Line()
		text := strings.TrimSpace(lines.Text())
		if text == "" {
			continue
		}
		var rec record
		if err := json.Unmarshal([]byte(text), &rec); err != nil {
			return nil, fmt.Errorf("curves: %s line %d: %w", name, line, err)
		}
		missing := func(what string) error {
			return fmt.Errorf("curves: %s line %d: %q event without %q", name, line, rec.Event, what)
		}
		switch rec.Event {
		case "step":
			switch {
			case rec.Step == nil:
				return nil, missing("step")
			case rec.Loss == nil:
				return nil, missing("loss")
			case rec.TokPerS == nil:
				return nil, missing("tok_per_s")
			}
			c.Loss = append(c.Loss, plotter.XY{X: *rec.Step, Y: *rec.Loss})
			c.TokPerS = append(c.TokPerS, plotter.XY{X: *rec.Step, Y: *rec.TokPerS})
			c.Epoch, c.EpochsDone = 0, -1
			if rec.Epoch != nil {
				c.Epoch = *rec.Epoch
			}
			if rec.EpochsDone != nil {
				c.EpochsDone = *rec.EpochsDone
			}
		case "valid":
			switch {
			case rec.Step == nil:
				return nil, missing("step")
			case rec.ValidPPL == nil:
				return nil, missing("valid_ppl")
			}
			c.ValidPPL = append(c.ValidPPL, plotter.XY{X: *rec.Step, Y: *rec.ValidPPL})
			if rec.ValidBLEU != nil {
				c.ValidBLEU = append(c.ValidBLEU, plotter.XY{X: *rec.Step, Y: *rec.ValidBLEU})
			}
			if rec.ValidAER != nil {
				c.ValidAER = append(c.ValidAER, plotter.XY{X: *rec.Step, Y: *rec.ValidAER})
			}
			// An older log's validation records have the completed epochs in "epoch" and no "epochs_done".
			if last := len(c.Loss) - 1; last >= 0 && c.Loss[last].X == *rec.Step && c.EpochsDone < 0 && rec.EpochsDone == nil && rec.Epoch != nil {
				c.EpochsDone = *rec.Epoch
			}
		}
	}
	if err := lines.Err(); err != nil {
		return nil, err // a *data.ParseError, naming the file and the line
	}
	if len(c.Loss) == 0 {
		return nil, fmt.Errorf("curves: %s: %w", name, ErrNoSteps)
	}
	return c, nil
}

// Title names the run and sums it up: "m30k: 12000 steps, 10 epochs; best validation perplexity 5.40 at step
// 5000". name is the run's name, such as the checkpoint's without ".ckpt".
func (c *Curves) Title(name string) string {
	last := c.Loss[len(c.Loss)-1]
	t := fmt.Sprintf("%s: %s", name, plural.Count(int(last.X), "step"))
	switch {
	case c.EpochsDone > 0 && c.EpochsDone == c.Epoch:
		t += ", " + plural.Count(c.EpochsDone, "epoch")
	case c.Epoch > 0:
		t += fmt.Sprintf(" (in epoch %d)", c.Epoch)
	}
	if len(c.ValidPPL) > 0 {
		best := c.ValidPPL[0]
		for _, v := range c.ValidPPL[1:] {
			if v.Y < best.Y {
				best = v
			}
		}
		t += fmt.Sprintf("; best validation perplexity %.2f at step %d", best.Y, int(best.X))
	}
	return t
}

// RunName is the name of the run whose metrics log is at path: its file name without ".metrics.jsonl" (or
// without its extension, for another name).
func RunName(path string) string {
	base := filepath.Base(path)
	if name, ok := strings.CutSuffix(base, ".metrics.jsonl"); ok && name != "" {
		return name
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// ReadFile reads the metrics log at path (see Read).
func ReadFile(path string) (*Curves, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("curves: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}

// Size of the picture: three panels stacked.
const (
	width       = 7 * vg.Inch
	panelHeight = 2.5 * vg.Inch
	pngDPI      = 96
)

// panels builds the three plots: loss, validation perplexity (when the log has any) and tokens per second. They
// share the x axis: each spans the steps of the whole log with the same ticks, and only the lowest shows their
// labels and the axis label, so that a validation stands under the loss of its step.
func (c *Curves) panels(title string) ([]*plot.Plot, error) {
	series := []struct {
		name string
		xys  plotter.XYs
		clr  color.Color
	}{
		{"training loss (nats per word)", c.Loss, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}},
		{"validation perplexity", c.ValidPPL, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}},
		{"training speed (target tokens/s)", c.TokPerS, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}},
	}
	xMin, xMax := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, p := range s.xys {
			xMin, xMax = min(xMin, p.X), max(xMax, p.X)
		}
	}
	if xMin == xMax { // one step: give the axis some width
		xMin, xMax = xMin-1, xMax+1
	}
	var plots []*plot.Plot
	for i, s := range series {
		p := plot.New()
		p.Title.TextStyle.Font = heatmap.Font(12)
		if i == 0 {
			p.Title.Text = title
		}
		p.Y.Label.Text = s.name
		p.X.Min, p.X.Max = xMin, xMax
		p.Title.Padding = vg.Points(8)
		p.X.Tick.Marker, p.Y.Tick.Marker = Ticks{}, Ticks{}
		for _, ts := range []*plot.Axis{&p.X, &p.Y} {
			ts.Label.TextStyle.Font = heatmap.Font(10)
			ts.Tick.Label.Font = heatmap.Font(9)
		}
		if i == len(series)-1 {
			p.X.Label.Text = "step"
		} else {
			// The same ticks and grid lines as the lowest panel, their labels drawn in no colour.
			p.X.Tick.Label.Color = color.Transparent
		}
		p.Add(plotter.NewGrid())
		if len(s.xys) == 0 {
			p.Title.Text = strings.TrimSpace(p.Title.Text + "\n(no " + s.name + " in the log)")
			plots = append(plots, p)
			continue
		}
		line, points, err := plotter.NewLinePoints(s.xys)
		if err != nil {
			return nil, fmt.Errorf("curves: %s: %w", s.name, err)
		}
		line.Color, points.Color = s.clr, s.clr
		points.Radius = vg.Points(2)
		p.Add(line, points)
		p.X.Min, p.X.Max = xMin, xMax // Add widened them to the series' own range
		plots = append(plots, p)
	}
	return plots, nil
}

// Ticks places ticks as plot.DefaultTicks does and labels them with as few decimals as they need, the same
// number for all of them: "1.0 1.1 1.2", "2500 10000 17500", never "1.1 1.1" for two ticks that differ nor
// "17500.00".
type Ticks struct{}

// Ticks returns the ticks between min and max.
func (Ticks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	var major []int
	for i, tk := range ticks {
		if !tk.IsMinor() {
			major = append(major, i)
		}
	}
	if len(major) == 0 {
		return ticks
	}
	// The fewest decimals that write every major tick's value exactly, to within a millionth of the range.
	tolerance := 1e-6 * math.Max(math.Abs(max-min), math.SmallestNonzeroFloat64)
	for prec := 0; prec <= 12; prec++ {
		exact := true
		for _, i := range major {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(ticks[i].Value, 'f', prec, 64), 64)
			exact = exact && math.Abs(v-ticks[i].Value) <= tolerance
		}
		if exact || prec == 12 {
			for _, i := range major {
				ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', prec, 64)
			}
			break
		}
	}
	return ticks
}

// Write draws the curves, in three panels one above the other, to path as .png or .svg.
func Write(path, title string, c *Curves) (err error) {
	plots, err := c.panels(title)
	if err != nil {
		return err
	}
	height := vg.Length(len(plots)) * panelHeight
	var canvas vg.CanvasWriterTo
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}
	case ".svg":
		canvas = heatmap.NewSVG(width, height)
	default:
		return fmt.Errorf("curves: %s: %w", path, ErrFormat)
	}
	dc := draw.New(canvas)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadTop: vg.Points(10), PadBottom: vg.Points(10),
		PadLeft: vg.Points(10), PadRight: vg.Points(20), PadY: vg.Points(15)}
	grid := make([][]*plot.Plot, len(plots))
	for i, p := range plots {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, dc)
	for i, p := range plots {
		p.Draw(canvases[i][0])
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("curves: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("curves: %w", cerr)
		}
	}()
	w := bufio.NewWriter(f)
	if svg, ok := canvas.(*vgsvg.Canvas); ok {
		err = heatmap.EncodeSVG(w, svg)
	} else {
		_, err = canvas.WriteTo(w)
	}
	if err != nil {
		return fmt.Errorf("curves: write %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("curves: write %s: %w", path, err)
	}
	return nil
}
