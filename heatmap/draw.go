package heatmap

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Sizes of the picture, in points (1/72 inch).
const (
	cellSize    = vg.Length(22)  // side of one heat cell
	labelSize   = vg.Length(11)  // token labels
	titleSize   = vg.Length(12)  // title lines
	barWidth    = vg.Length(80)  // colour scale with its axis
	margin      = vg.Length(12)  // around the picture
	titleWrap   = 90             // characters per title line
	paletteSize = 256            // colours of the scale
	pngDPI      = 96             // pixels per inch of PNG output
	minWidth    = vg.Length(300) // so that a one-word sentence still has room for its title
)

// Font is the typeface of every label: Liberation Sans, compiled into the binary by gonum's plot module, so
// pictures look the same on every machine. It covers Latin (with German, French, Czech and Vietnamese
// letters), Greek and Cyrillic (and Hebrew letters, drawn left to right); other scripts (CJK, Arabic, Thai,
// Devanagari, …) have no glyphs.
func Font(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// ColorMap is the colour scale: weight 0 is white, 1 near black through yellow, orange and purple (Moreland's
// extended black body, reversed), so darker always means more attention, also when printed in grey.
func ColorMap() palette.ColorMap {
	cm := palette.Reverse(moreland.ExtendedBlackBody())
	cm.SetMin(0)
	cm.SetMax(1)
	return cm
}

// WritePNG draws the map as a PNG image (see picture for the layout).
func WritePNG(w io.Writer, m *Map) error {
	pic, err := newPicture(m)
	if err != nil {
		return err
	}
	c := vgimg.NewWith(vgimg.UseWH(pic.width, pic.height), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	pic.draw(draw.New(c))
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("heatmap: write png: %w", err)
	}
	return nil
}

// WriteSVG draws the map as an SVG document with its font embedded, so it renders the same anywhere.
func WriteSVG(w io.Writer, m *Map) error {
	pic, err := newPicture(m)
	if err != nil {
		return err
	}
	c := vgsvg.NewWith(vgsvg.UseWH(pic.width, pic.height), vgsvg.EmbedFonts(true))
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pic.draw(dc)
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("heatmap: write svg: %w", err)
	}
	return nil
}

// picture is a map laid out for drawing: the heat map with output tokens down the rows (first at the top,
// </s> last) and source tokens along the columns (written upwards when any is wider than a cell), the title
// (sentence and model) above, and the colour scale on the right.
type picture struct {
	width, height vg.Length
	heat, bar     *plot.Plot
	rows, cols    int
	title         string
	titleStyle    text.Style
	titleHeight   vg.Length // with the gap below it
	// after draw: where the cells are
	heatData draw.Canvas
}

// grid shows a Map as plotter.GridXYZ: column c is source token c, row r is output token r.
type grid struct{ m *Map }

func (g grid) Dims() (c, r int)   { return len(g.m.Source), len(g.m.Output) }
func (g grid) Z(c, r int) float64 { return float64(g.m.Weights[r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Min() float64       { return 0 }
func (g grid) Max() float64       { return 1 }

func ticks(tokens []string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(tokens))
	for i, tok := range tokens {
		t[i] = plot.Tick{Value: float64(i), Label: tok}
	}
	return t
}

func newPicture(m *Map) (*picture, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.Source) == 0 || len(m.Output) == 0 {
		return nil, fmt.Errorf("heatmap: nothing to draw: %d source and %d output tokens", len(m.Source), len(m.Output))
	}
	pic := &picture{rows: len(m.Output), cols: len(m.Source), title: title(m)}
	pic.titleStyle = text.Style{Color: color.Black, Font: Font(titleSize), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	heat := plot.New()
	heat.Add(plotter.NewHeatMap(grid{m}, ColorMap().Palette(paletteSize)))
	heat.X.Tick.Marker, heat.Y.Tick.Marker = ticks(m.Source), ticks(m.Output)
	heat.X.Tick.Label.Font, heat.Y.Tick.Label.Font = Font(labelSize), Font(labelSize)
	label := heat.X.Tick.Label
	heat.X.Padding, heat.Y.Padding = 0, 0
	heat.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}} // first output token at the top
	heat.X.Label.Text, heat.Y.Label.Text = "source", "output"
	heat.X.Label.TextStyle.Font, heat.Y.Label.TextStyle.Font = Font(labelSize), Font(labelSize)
	widest := vg.Length(0)
	for _, tok := range m.Source {
		widest = max(widest, label.Width(tok))
	}
	xLabelHeight := label.Height("Ag")
	if widest > cellSize-2 {
		heat.X.Tick.Label.Rotation = math.Pi / 2
		heat.X.Tick.Label.XAlign, heat.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		xLabelHeight = widest
	}
	outWidest := vg.Length(0)
	for _, tok := range m.Output {
		outWidest = max(outWidest, label.Width(tok))
	}
	titleRect := pic.titleStyle.Rectangle(pic.title)
	// Axis label, tick labels and tick marks take about this much beside the cells.
	axisExtra := 2*label.Height("Ag") + 2*vg.Length(10)
	pic.titleHeight = titleRect.Size().Y + margin
	pic.width = max(minWidth, 2*margin+outWidest+axisExtra+vg.Length(pic.cols)*cellSize+barWidth, titleRect.Size().X+2*margin)
	pic.height = 2*margin + pic.titleHeight + xLabelHeight + axisExtra + vg.Length(pic.rows)*cellSize
	// Whole pixels: the PNG then has exactly the picture's size.
	pic.width, pic.height = wholePixels(pic.width), wholePixels(pic.height)

	// The scale's axis; its colours are filled in by draw.
	bar := plot.New()
	bar.X.Min, bar.X.Max, bar.Y.Min, bar.Y.Max = 0, 1, 0, 1
	bar.HideX()
	bar.Y.Padding = 0
	bar.Y.Tick.Label.Font = Font(labelSize)
	bar.Y.Label.Text = "attention weight"
	bar.Y.Label.TextStyle.Font = Font(labelSize)
	pic.heat, pic.bar = heat, bar
	return pic, nil
}

// wholePixels rounds l up to a whole number of PNG pixels.
func wholePixels(l vg.Length) vg.Length {
	return vg.Length(math.Ceil(l.Dots(pngDPI)-1e-9)) * vg.Inch / pngDPI
}

// title is the sentence and, on the next line, the model; lines longer than titleWrap characters are wrapped.
func title(m *Map) string {
	what := "output"
	if m.Forced {
		what = "forced reference"
	}
	lines := wrap("source: "+strings.Join(m.Source, " "), titleWrap)
	if len(m.Reference) > 0 && !m.Forced {
		lines = append(lines, wrap("reference: "+strings.Join(m.Reference, " "), titleWrap)...)
	}
	lines = append(lines, wrap(what+": "+strings.Join(m.Output, " "), titleWrap)...)
	if m.Forced && len(m.ModelOutput) > 0 {
		lines = append(lines, wrap("model output: "+strings.Join(m.ModelOutput, " "), titleWrap)...)
	}
	model := m.Model.Checkpoint
	if model == "" {
		model = "(unnamed model)"
	}
	if m.Model.Step > 0 {
		model += fmt.Sprintf(", step %d", m.Model.Step)
	}
	return strings.Join(append(lines, "model: "+model), "\n")
}

// wrap breaks s at spaces into lines of at most width runes (a longer word gets a line of its own).
func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	return append(lines, line)
}

// draw draws the picture on c (of the picture's size) and remembers where the heat cells went.
func (pic *picture) draw(c draw.Canvas) {
	inner := draw.Crop(c, margin, -margin, margin, -margin)
	c.FillText(pic.titleStyle, vg.Point{X: (c.Min.X + c.Max.X) / 2, Y: inner.Max.Y}, pic.title)
	heatArea := draw.Crop(inner, 0, -barWidth, 0, -pic.titleHeight)
	pic.heat.Draw(heatArea)
	pic.heatData = pic.heat.DataCanvas(heatArea)
	// The scale stands beside the cells, as tall as they are.
	barArea := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: inner.Max.X - barWidth + margin, Y: pic.heatData.Min.Y},
		Max: vg.Point{X: inner.Max.X, Y: pic.heatData.Max.Y}}}
	pic.bar.Draw(barArea)
	// The colour scale, bottom (0) to top (1), as stacked bands that overlap by a hair so that no background
	// shows between them (plotter.ColorBar draws a 1-pixel-wide image, which SVG viewers do not stretch).
	scale := pic.bar.DataCanvas(barArea)
	colors := ColorMap().Palette(paletteSize).Colors()
	band := (scale.Max.Y - scale.Min.Y) / vg.Length(len(colors))
	for k, clr := range colors {
		y0 := scale.Min.Y + vg.Length(k)*band
		y1 := min(y0+band+0.5, scale.Max.Y)
		c.SetColor(clr)
		c.Fill(vg.Rectangle{Min: vg.Point{X: scale.Min.X, Y: y0}, Max: vg.Point{X: scale.Max.X, Y: y1}}.Path())
	}
}

// cellCenter is the centre of the cell of output token t and source token i, in drawing coordinates (points
// from the bottom left), once the picture has been drawn.
func (pic *picture) cellCenter(t, i int) vg.Point {
	x, y := pic.heat.Transforms(&pic.heatData)
	return vg.Point{X: x(float64(i)), Y: y(float64(t))}
}
