package heatmap

import (
	"bytes"
	"encoding/xml"
	"errors"
	"golang.org/x/image/font/sfnt"
	"gonum.org/v1/plot/font"
	"image"
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
	if !strings.Contains(buf.String(), "@font-face") {
		t.Error("SVG does not embed its font")
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
