package heatmap

import (
	"bytes"
	"encoding/xml"
	"errors"
	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot/font"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// testMap is a 4×5 map whose weights are all different and spread over [0, 1], with the letters of the four
// languages the README promises.
func testMap() *Map {
	m := &Map{
		Source: []string{"ein", "mädchen", "fährt", "à", "přes"},
		Output: []string{"a", "girl", "rides", "tiếng", "</s>"},
		Model:  Model{Checkpoint: "m.ckpt", Step: 42},
	}
	// weight of cell (t, i) is ((7t + 3i) mod 25) / 24: distinct values 0, 1/24, …, 1.
	for t := range m.Output {
		row := make([]float32, len(m.Source))
		for i := range row {
			row[i] = float32((7*t+3*i)%25) / 24
		}
		m.Weights = append(m.Weights, row)
	}
	return m
}

// luminance is the relative luminance Y of an sRGB pixel, 0 (black) to 1 (white).
func luminance(img image.Image, x, y int) float64 {
	r, g, b, _ := img.At(x, y).RGBA()
	linear := func(c uint32) float64 {
		v := float64(c) / 0xffff
		if v <= 0.04045 {
			return v / 12.92
		}
		return math.Pow((v+0.055)/1.055, 2.4)
	}
	return 0.2126*linear(r) + 0.7152*linear(g) + 0.0722*linear(b)
}

func TestPNGHasItsSizeAndCellsDarkenWithWeight(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Map)
	}{
		{"short tokens", func(*Map) {}},
		{"long tokens are rotated", func(m *Map) { m.Source[1] = "geschwindigkeitsbegrenzung" }},
		{"one cell", func(m *Map) { m.Source, m.Output, m.Weights = m.Source[:1], m.Output[:1], [][]float32{{0.5}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := testMap()
			tt.edit(m)
			var buf bytes.Buffer
			if err := WritePNG(&buf, m); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(&buf)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			pic, err := newPicture(m)
			if err != nil {
				t.Fatal(err)
			}
			// Draw again, on a canvas of our own, to learn where the cells are.
			pic.draw(draw.New(vgimg.NewWith(vgimg.UseWH(pic.width, pic.height), vgimg.UseDPI(pngDPI))))
			dots := func(l vg.Length) int { return int(math.Round(l.Dots(pngDPI))) }
			if b := img.Bounds(); b.Dx() != dots(pic.width) || b.Dy() != dots(pic.height) {
				t.Fatalf("image is %v, want %d×%d", b.Size(), dots(pic.width), dots(pic.height))
			}
			type cell struct {
				weight, lum float64
			}
			var cells []cell
			for r := range m.Output {
				for i := range m.Source {
					p := pic.cellCenter(r, i)
					x, y := int(p.X.Dots(pngDPI)), img.Bounds().Dy()-int(p.Y.Dots(pngDPI))
					cells = append(cells, cell{float64(m.Weights[r][i]), luminance(img, x, y)})
				}
			}
			for _, a := range cells {
				for _, b := range cells {
					if a.weight < b.weight && a.lum <= b.lum {
						t.Fatalf("weight %.3f has luminance %.3f, heavier weight %.3f has %.3f: colours do not order like weights",
							a.weight, a.lum, b.weight, b.lum)
					}
				}
			}
		})
	}
}

func TestSVGIsWellFormedXMLWithTheTokens(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSVG(&buf, testMap()); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var root string
	var texts strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			texts.Write(tok)
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, word := range []string{"mädchen", "přes", "tiếng", "</s>"} {
		if !strings.Contains(texts.String(), word) {
			t.Errorf("SVG lacks the token %q", word)
		}
	}
	// The text is text in a font the viewer has: no embedded font, which made a 5×5 map 580 KB.
	if strings.Contains(buf.String(), "@font-face") || strings.Contains(buf.String(), "base64") {
		t.Error("SVG embeds a font or an image")
	}
	if !strings.Contains(buf.String(), svgFamilies) {
		t.Errorf("SVG does not ask for %q", svgFamilies)
	}
	if buf.Len() > 100_000 {
		t.Errorf("SVG of a 5×5 map is %d bytes, want at most 100 KB", buf.Len())
	}
}

// TestColorMapIsMagmaReversed checks the scale's ends against matplotlib's magma (pale yellow #fcfdbf at 0,
// near black #000004 at 1) and that its CIELAB lightness falls linearly with the weight, which makes equal steps
// of weight equally visible.
func TestColorMapIsMagmaReversed(t *testing.T) {
	cm := ColorMap()
	for _, tt := range []struct {
		v    float64
		want color.RGBA
	}{{0, color.RGBA{0xfc, 0xfd, 0xbf, 0xff}}, {1, color.RGBA{0x00, 0x00, 0x04, 0xff}}} {
		c, err := cm.At(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := c.RGBA()
		for i, got := range []uint32{r >> 8, g >> 8, b >> 8} {
			want := []uint8{tt.want.R, tt.want.G, tt.want.B}[i]
			if d := int(got) - int(want); d < -1 || d > 1 {
				t.Errorf("weight %g: colour %02x%02x%02x, want %02x%02x%02x", tt.v, r>>8, g>>8, b>>8, tt.want.R, tt.want.G, tt.want.B)
				break
			}
		}
	}
	lightness := func(v float64) float64 {
		c, err := cm.At(v)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b, _ := c.RGBA()
		y := 0.2126*linear(r) + 0.7152*linear(g) + 0.0722*linear(b)
		if y > 216.0/24389 {
			return 116*math.Cbrt(y) - 16
		}
		return 24389.0 / 27 * y
	}
	l0, l1 := lightness(0), lightness(1)
	for v := 0.0; v <= 1; v += 1.0 / 64 {
		if want, got := l0+v*(l1-l0), lightness(v); math.Abs(got-want) > 1 {
			t.Errorf("weight %.3f: lightness L* %.1f, want %.1f (linear from %.1f to %.1f)", v, got, want, l0, l1)
		}
	}
}

// linear is the linear-light value of an sRGB channel of color.RGBA's 16-bit range.
func linear(c uint32) float64 {
	v := float64(c) / 0xffff
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// runaway is a 10-word sentence whose translation repeats itself to 80 tokens.
func runaway() *Map {
	m := &Map{Source: strings.Fields("ein mann fährt mit dem fahrrad über eine brücke ."), Model: Model{Checkpoint: "m.ckpt"}}
	for t := range 80 {
		m.Output = append(m.Output, []string{"a", "man", "riding", "a", "bike"}[t%5])
		row := make([]float32, len(m.Source))
		row[t%len(row)] = 1
		m.Weights = append(m.Weights, row)
	}
	return m
}

// TestRunawayOutputIsCut draws an 80-token runaway translation of a 10-word sentence: the picture has the first
// 20 rows (twice the source length) and says so under the map, so it is as tall as a 20-row picture plus the
// note, not 80 rows tall.
func TestRunawayOutputIsCut(t *testing.T) {
	m := runaway()
	if got := m.DrawnRows(); got != 20 {
		t.Fatalf("DrawnRows = %d, want 20", got)
	}
	notes := m.Notes()
	if len(notes) != 1 || !strings.Contains(notes[0], "first 20 of the 80 output rows") {
		t.Fatalf("notes %q, want one saying the first 20 of the 80 rows are drawn", notes)
	}
	pic, err := newPicture(m)
	if err != nil {
		t.Fatal(err)
	}
	short := runaway()
	short.Output, short.Weights = short.Output[:20], short.Weights[:20]
	if len(short.Notes()) != 0 {
		t.Fatalf("a 20-row map has notes %q", short.Notes())
	}
	picShort, err := newPicture(short)
	if err != nil {
		t.Fatal(err)
	}
	if pic.rows != 20 || pic.height > picShort.height+4*titleSize+noteSize*3 {
		t.Errorf("80-row picture draws %d rows and is %.0f pt tall; a 20-row one is %.0f pt", pic.rows, pic.height.Points(), picShort.height.Points())
	}
	var png, svg bytes.Buffer
	if err := WritePNG(&png, m); err != nil {
		t.Fatal(err)
	}
	if err := WriteSVG(&svg, m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "first 20 of the 80 output rows") {
		t.Error("the SVG does not say that rows were left out")
	}
	var title string
	title = pic.title
	if strings.Count(title, "\n") > 3*titleLines {
		t.Errorf("title of %d lines:\n%s", strings.Count(title, "\n")+1, title)
	}
}

// TestWordsTheFontCannotDrawShowPlaceholders: a CJK word is drawn as one □ per character, in labels and title,
// and the notes say so; the matrix exports keep the word.
func TestWordsTheFontCannotDrawShowPlaceholders(t *testing.T) {
	if got, n := Drawable("東京"); got != "□□" || n != 2 {
		t.Errorf("Drawable(東京) = %q, %d; want □□, 2", got, n)
	}
	if got, n := Drawable("přes"); got != "přes" || n != 0 {
		t.Errorf("Drawable(přes) = %q, %d", got, n)
	}
	m := testMap()
	m.Source[1] = "東京"
	var svg bytes.Buffer
	if err := WriteSVG(&svg, m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg.String(), "東京") || !strings.Contains(svg.String(), ">□□") {
		t.Error("the SVG does not draw 東京 as □□")
	}
	if notes := m.Notes(); len(notes) != 1 || !strings.Contains(notes[0], "1 word has characters") {
		t.Errorf("notes %q", notes)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, m); err != nil || !strings.Contains(js.String(), "東京") {
		t.Errorf("the JSON lost 東京 (%v)", err)
	}
}

// TestFontCoversTheLanguagesTheREADMENames looks up every letter of German, French, Czech and Vietnamese
// sample text in the embedded font: a letter without a glyph would be drawn as an empty box.
func TestFontCoversTheLanguagesTheREADMENames(t *testing.T) {
	face := font.DefaultCache.Lookup(Font(labelSize), labelSize)
	if face.Face == nil {
		t.Fatal("the label font is not in plot's font cache")
	}
	samples := map[string]string{
		"German":     "Äpfel über Straße, Öl; ÄÖÜäöüß",
		"French":     "Où est l'élève à Noël ? Cœur, garçon, ÀÂÆÇÉÈÊËÎÏÔŒÙÛÜŸàâæçéèêëîïôœùûüÿ",
		"Czech":      "Příliš žluťoučký kůň úpěl ďábelské ódy ÁČĎÉĚÍŇÓŘŠŤÚŮÝŽáčďéěíňóřšťúůýž",
		"Vietnamese": "Tiếng Việt có dấu: ăâđêôơư ĂÂĐÊÔƠƯ ảãạấầẩẫậắằẳẵặẻẽẹếềểễệỉĩịỏõọốồổỗộớờởỡợủũụứừửữựỳỷỹỵ",
	}
	var buf sfnt.Buffer
	for lang, sample := range samples {
		for _, r := range sample {
			if r == ' ' {
				continue
			}
			if idx, err := face.Face.GlyphIndex(&buf, r); err != nil || idx == 0 {
				t.Errorf("%s: %q (U+%04X) has no glyph in %s", lang, r, r, face.Name())
			}
		}
	}
	// And a script the README says is not covered, so the check above can fail.
	if idx, _ := face.Face.GlyphIndex(&buf, '中'); idx != 0 {
		t.Errorf("the font has a glyph for 中; update the README's list of scripts")
	}
}

func TestValidateRejectsMismatchedShapes(t *testing.T) {
	for _, tt := range []struct {
		name string
		edit func(*Map)
	}{
		{"missing row", func(m *Map) { m.Weights = m.Weights[1:] }},
		{"short row", func(m *Map) { m.Weights[2] = m.Weights[2][1:] }},
		{"NaN weight", func(m *Map) { m.Weights[1][1] = float32(math.NaN()) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := testMap()
			tt.edit(m)
			for what, write := range map[string]func(io.Writer, *Map) error{"png": WritePNG, "svg": WriteSVG, "json": WriteJSON, "csv": WriteCSV} {
				if err := write(io.Discard, m); !errors.Is(err, ErrShape) {
					t.Errorf("%s: error %v, want ErrShape", what, err)
				}
			}
		})
	}
}

// cellCenter is the centre of the cell of output token t and source token i, in drawing coordinates (points
// from the bottom left), once the picture has been drawn.
func (pic *picture) cellCenter(t, i int) vg.Point {
	x, y := pic.heat.Transforms(&pic.heatData)
	return vg.Point{X: x(float64(i)), Y: y(float64(t))}
}
