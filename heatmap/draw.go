package heatmap

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"golang.org/x/image/font/sfnt"
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

	"github.com/attend-nmt/attend/internal/plural"
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
	noteSize    = vg.Length(10)  // notes under the map
	titleLines  = 3              // lines of the title for each of source, reference and output
)

// A picture draws at most max(MinRows, RowsPerSourceWord × source words) output rows: the first ones. A longer
// output is almost always a runaway translation that repeats itself up to the length limit (80 rows for a
// 10-word sentence), and its picture would be mostly repetition, thousands of pixels tall. The picture then says
// under the map how many rows it left out; the JSON and CSV exports have every row.
const (
	MinRows           = 20
	RowsPerSourceWord = 2
)

// Placeholder is drawn in labels and titles for each character the font has no glyph for (see Font), so that a
// word in another script shows as "□□" instead of vanishing.
const Placeholder = "□"

// Font is the typeface of every label: Liberation Sans, compiled into the binary by gonum's plot module, so
// pictures look the same on every machine. It covers Latin (with German, French, Czech and Vietnamese
// letters), Greek and Cyrillic (and Hebrew letters, drawn left to right); other scripts (CJK, Arabic, Thai,
// Devanagari, …) have no glyphs.
func Font(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// magma is every sixteenth colour of matplotlib's magma colour map (van der Walt and Smith's, CC0), from
// black to pale yellow, its lightness rising all the way.
var magma = [...]uint32{0x000004, 0x0a0822, 0x1d1147, 0x36106b, 0x51127c, 0x6a1c81, 0x832681, 0x9c2e7f, 0xb73779,
	0xcf4070, 0xe55064, 0xf4695c, 0xfb8761, 0xfea571, 0xfec287, 0xfde0a1, 0xfcfdbf}

// ColorMap is the colour scale: magma reversed, from pale yellow (weight 0) through orange, red and purple to
// near black (weight 1). It is perceptually uniform: between magma's colours, gonum's moreland.NewLuminance
// interpolates in CIELAB with lightness linear in the weight, so equal differences of weight look equally
// different, and darker always means more attention, also when printed in grey or seen without colour vision.
func ColorMap() palette.ColorMap {
	controls := make([]color.Color, len(magma))
	for i, c := range magma {
		controls[i] = color.RGBA{R: uint8(c >> 16), G: uint8(c >> 8), B: uint8(c), A: 0xff}
	}
	cm, err := moreland.NewLuminance(controls)
	if err != nil {
		panic(err) // magma's lightness rises: an error is a bug in the table
	}
	cm = palette.Reverse(cm)
	cm.SetMin(0)
	cm.SetMax(1)
	return cm
}

// Drawable returns s with each character the font has no glyph for replaced by Placeholder, and how many
// were replaced.
func Drawable(s string) (string, int) {
	face := font.DefaultCache.Lookup(Font(labelSize), labelSize)
	var buf sfnt.Buffer
	var b strings.Builder
	missing := 0
	for _, r := range s {
		if idx, err := face.Face.GlyphIndex(&buf, r); err != nil || idx == 0 {
			b.WriteString(Placeholder)
			missing++
			continue
		}
		b.WriteRune(r)
	}
	if missing == 0 {
		return s, 0
	}
	return b.String(), missing
}

// DrawnRows is the number of output rows a picture of m draws: every row, or the first max(MinRows,
// RowsPerSourceWord × source words) of a longer output.
func (m *Map) DrawnRows() int {
	return min(len(m.Output), max(MinRows, RowsPerSourceWord*len(m.Source)))
}

// Notes says what a picture of m leaves out or changes, one sentence each: output rows not drawn (see
// DrawnRows) and words drawn with Placeholder. It is nil when the picture shows the map as it is. The picture
// writes the notes under the map; a command that writes pictures prints them too.
func (m *Map) Notes() []string {
	var notes []string
	if n := m.DrawnRows(); n < len(m.Output) {
		notes = append(notes, fmt.Sprintf("only the first %d of the %d output rows are drawn (a picture has at most %d rows per source word, and at least %d); the .json and .csv exports have every row",
			n, len(m.Output), RowsPerSourceWord, MinRows))
	}
	words, chars := 0, 0
	for _, side := range [][]string{m.Source, m.Output, m.Reference, m.ModelOutput} {
		for _, w := range side {
			if _, n := Drawable(w); n > 0 {
				words++
				chars += n
			}
		}
	}
	if words > 0 {
		notes = append(notes, fmt.Sprintf("%s %s characters the font has no glyph for, drawn as %s (%d in all); the .json and .csv exports have the words as they are",
			plural.Count(words, "word"), plural.Noun(words, "has", "have"), Placeholder, chars))
	}
	return notes
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

// WriteSVG draws the map as an SVG document whose labels are text in Liberation Sans (see NewSVG).
func WriteSVG(w io.Writer, m *Map) error {
	pic, err := newPicture(m)
	if err != nil {
		return err
	}
	c := NewSVG(pic.width, pic.height)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	pic.draw(dc)
	if err := EncodeSVG(w, c); err != nil {
		return fmt.Errorf("heatmap: write svg: %w", err)
	}
	return nil
}

// NewSVG returns an SVG canvas of the given size that does not embed its fonts: a picture's text stays text,
// and the file stays small (a 5×8 map is about 30 KB, against 580 KB with Liberation Sans embedded). Write it
// with EncodeSVG.
func NewSVG(width, height vg.Length) *vgsvg.Canvas {
	return vgsvg.NewWith(vgsvg.UseWH(width, height), vgsvg.EmbedFonts(false))
}

// svgFamily is how gonum's SVG canvas names Font's family, and svgFamilies what EncodeSVG names instead: Arial
// has the same metrics as Liberation Sans, so text laid out for one fits the other.
const (
	svgFamily   = "font-family:Liberation Sans;"
	svgFamilies = "font-family:Liberation Sans,Arial,Helvetica,sans-serif;"
)

// EncodeSVG writes the canvas as an SVG document whose text asks for Liberation Sans, Arial (which has the same
// metrics, so labels keep their places), Helvetica, or the viewer's sans-serif font, in that order.
func EncodeSVG(w io.Writer, c *vgsvg.Canvas) error {
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	_, err := w.Write(bytes.ReplaceAll(buf.Bytes(), []byte(svgFamily), []byte(svgFamilies)))
	return err
}

// picture is a map laid out for drawing: the heat map with output tokens down the rows (first at the top,
// </s> last) and source tokens along the columns (written upwards when any is wider than a cell), the title
// (sentence and model) above, and the colour scale on the right.
type picture struct {
	width, height vg.Length
	heat, bar     *plot.Plot
	rows, cols    int // rows drawn: see Map.DrawnRows
	title         string
	titleStyle    text.Style
	titleHeight   vg.Length // with the gap below it
	notes         string    // Map.Notes, one per line, under the map
	noteStyle     text.Style
	notesHeight   vg.Length // with the gap above them; 0 without notes
	// after draw: where the cells are
	heatData draw.Canvas
}

// grid shows a Map as plotter.GridXYZ: column c is source token c, row r is output token r, for the first rows
// output tokens.
type grid struct {
	m    *Map
	rows int
}

func (g grid) Dims() (c, r int)   { return len(g.m.Source), g.rows }
func (g grid) Z(c, r int) float64 { return float64(g.m.Weights[r][c]) }
func (g grid) X(c int) float64    { return float64(c) }
func (g grid) Y(r int) float64    { return float64(r) }
func (g grid) Min() float64       { return 0 }
func (g grid) Max() float64       { return 1 }

// ticks labels positions 0, 1, … with the tokens, each made Drawable.
func ticks(tokens []string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(tokens))
	for i, tok := range tokens {
		label, _ := Drawable(tok)
		t[i] = plot.Tick{Value: float64(i), Label: label}
	}
	return t
}

// drawableAll is Drawable of every token.
func drawableAll(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, tok := range tokens {
		out[i], _ = Drawable(tok)
	}
	return out
}

func newPicture(m *Map) (*picture, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if len(m.Source) == 0 || len(m.Output) == 0 {
		return nil, fmt.Errorf("heatmap: nothing to draw: %d source and %d output tokens", len(m.Source), len(m.Output))
	}
	pic := &picture{rows: m.DrawnRows(), cols: len(m.Source), title: title(m)}
	var notes []string
	for _, note := range m.Notes() {
		notes = append(notes, wrap(note, titleWrap, 0)...)
	}
	pic.notes = strings.Join(notes, "\n")
	pic.titleStyle = text.Style{Color: color.Black, Font: Font(titleSize), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YTop}
	pic.noteStyle = text.Style{Color: color.Gray{Y: 0x40}, Font: Font(noteSize), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YBottom}
	source, output := drawableAll(m.Source), drawableAll(m.Output[:pic.rows])
	heat := plot.New()
	heat.Add(plotter.NewHeatMap(grid{m, pic.rows}, ColorMap().Palette(paletteSize)))
	heat.X.Tick.Marker, heat.Y.Tick.Marker = ticks(m.Source), ticks(output)
	heat.X.Tick.Label.Font, heat.Y.Tick.Label.Font = Font(labelSize), Font(labelSize)
	label := heat.X.Tick.Label
	heat.X.Padding, heat.Y.Padding = 0, 0
	heat.Y.Scale = plot.InvertedScale{Normalizer: plot.LinearScale{}} // first output token at the top
	heat.X.Label.Text, heat.Y.Label.Text = "source", "output"
	heat.X.Label.TextStyle.Font, heat.Y.Label.TextStyle.Font = Font(labelSize), Font(labelSize)
	widest := vg.Length(0)
	for _, tok := range source {
		widest = max(widest, label.Width(tok))
	}
	xLabelHeight := label.Height("Ag")
	if widest > cellSize-2 {
		heat.X.Tick.Label.Rotation = math.Pi / 2
		heat.X.Tick.Label.XAlign, heat.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
		// gonum anchors a tick label a font descent above its place, which a rotated label's end fills, up into
		// the tick marks: a trailing space, wider than the descent, keeps it clear of them.
		marks := heat.X.Tick.Marker.(plot.ConstantTicks)
		for i := range marks {
			marks[i].Label += " "
		}
		xLabelHeight = widest + label.Width(" ")
	}
	outWidest := vg.Length(0)
	for _, tok := range output {
		outWidest = max(outWidest, label.Width(tok))
	}
	titleRect := pic.titleStyle.Rectangle(pic.title)
	if pic.notes != "" {
		notesRect := pic.noteStyle.Rectangle(pic.notes)
		pic.notesHeight = notesRect.Size().Y + margin
		titleRect.Max.X = max(titleRect.Max.X, titleRect.Min.X+notesRect.Size().X)
	}
	// Axis label, tick labels and tick marks take about this much beside the cells.
	axisExtra := 2*label.Height("Ag") + 2*vg.Length(10)
	pic.titleHeight = titleRect.Size().Y + margin
	pic.width = max(minWidth, 2*margin+outWidest+axisExtra+vg.Length(pic.cols)*cellSize+barWidth, titleRect.Size().X+2*margin)
	pic.height = 2*margin + pic.titleHeight + xLabelHeight + axisExtra + vg.Length(pic.rows)*cellSize + pic.notesHeight
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

// title is the sentence and, on the next line, the model; lines longer than titleWrap characters are wrapped,
// each sentence into at most titleLines lines, and characters the font lacks are drawn as Placeholder.
func title(m *Map) string {
	what := "output"
	if m.Forced {
		what = "forced reference"
	}
	sentence := func(name string, words []string) []string {
		return wrap(name+": "+strings.Join(drawableAll(words), " "), titleWrap, titleLines)
	}
	lines := sentence("source", m.Source)
	if len(m.Reference) > 0 && !m.Forced {
		lines = append(lines, sentence("reference", m.Reference)...)
	}
	lines = append(lines, sentence(what, m.Output)...)
	if m.Forced && len(m.ModelOutput) > 0 {
		lines = append(lines, sentence("model output", m.ModelOutput)...)
	}
	model := m.Model.Checkpoint
	if model == "" {
		model = "(unnamed model)"
	}
	if m.Model.Step > 0 {
		model += fmt.Sprintf(", step %d", m.Model.Step)
	}
	model, _ = Drawable(model)
	return strings.Join(append(lines, "model: "+model), "\n")
}

// wrap breaks s at spaces into lines of at most width runes (a longer word gets a line of its own); with
// maxLines > 0, a text that needs more lines is cut after maxLines of them, the last ending in "…".
func wrap(s string, width, maxLines int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && len([]rune(line))+1+len([]rune(word)) > width {
			if len(lines) == maxLines-1 {
				return append(lines, line+" …")
			}
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
	if pic.notes != "" {
		c.FillText(pic.noteStyle, vg.Point{X: inner.Min.X, Y: inner.Min.Y}, pic.notes)
	}
	heatArea := draw.Crop(inner, 0, -barWidth, pic.notesHeight, -pic.titleHeight)
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
