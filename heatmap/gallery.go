package heatmap

import (
	"bufio"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// GalleryEntry is one sentence of a gallery: its map, and the files (relative to the gallery page) that hold
// its picture and, optionally, its matrix.
type GalleryEntry struct {
	Map   *Map
	Image string // e.g. "0001.png"
	Data  string // e.g. "0001.json"; "" for none
}

// WriteGallery writes an HTML page (self-contained: inline style and script, no server needed, opens from the
// file system) showing every entry's picture with its source, output, reference and mean attention entropy,
// in input order or sorted by entropy (buttons; the page's address may also end in #entropy-asc or
// #entropy-desc).
func WriteGallery(w io.Writer, title string, entries []GalleryEntry) error {
	type item struct {
		Index, Line               int
		Source, Output, Reference string
		ModelOutput               string
		Forced                    bool
		Entropy, LogProb          float64
		Image, Data               string
	}
	items := make([]item, len(entries))
	for i, e := range entries {
		if err := e.Map.Validate(); err != nil {
			return fmt.Errorf("gallery entry %d: %w", i+1, err)
		}
		items[i] = item{Index: i + 1, Line: e.Map.Line, Source: strings.Join(e.Map.Source, " "), Output: strings.Join(e.Map.Output, " "),
			Reference: strings.Join(e.Map.Reference, " "), ModelOutput: strings.Join(e.Map.ModelOutput, " "),
			Forced: e.Map.Forced, Entropy: e.Map.MeanEntropy(), LogProb: e.Map.LogProb(), Image: e.Image, Data: e.Data}
	}
	page, err := template.New("gallery").Parse(galleryPage)
	if err != nil {
		panic(err) // the template is a constant: a parse error is a bug
	}
	if err := page.Execute(w, struct {
		Title string
		Items []item
	}{title, items}); err != nil {
		return fmt.Errorf("heatmap: write gallery: %w", err)
	}
	return nil
}

// galleryPage is the template of the gallery page.
const galleryPage = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", Arial, sans-serif; margin: 1.5em; color: #222; }
.controls button { margin-right: .5em; }
.controls button.active { font-weight: bold; }
.entry { border-top: 1px solid #ccc; padding: 1em 0; display: flex; gap: 1.5em; align-items: flex-start; }
.entry img { max-width: 60vw; border: 1px solid #eee; }
.entry dl { margin: 0; display: grid; grid-template-columns: max-content 1fr; gap: .3em 1em; }
.entry dt { font-weight: bold; }
.entry dd { margin: 0; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>{{len .Items}} sentences. Mean attention entropy is in nats per output word: 0 when each word looks at a single
source word, higher when attention is spread.</p>
<p class="controls">Order:
<button id="by-input" data-order="input">input order</button>
<button id="by-entropy-asc" data-order="entropy-asc">entropy, lowest first</button>
<button id="by-entropy-desc" data-order="entropy-desc">entropy, highest first</button></p>
<div id="entries">
{{range .Items}}<div class="entry" id="s{{.Index}}" data-index="{{.Index}}" data-entropy="{{printf "%.6f" .Entropy}}">
<a href="{{.Image}}"><img src="{{.Image}}" alt="attention heat map of sentence {{.Index}}"></a>
<dl>
<dt>sentence</dt><dd>{{.Index}}{{if .Line}} (input line {{.Line}}){{end}}</dd>
<dt>source</dt><dd>{{.Source}}</dd>
{{if .Forced}}<dt>reference (forced, the rows)</dt><dd>{{.Output}}</dd>
<dt>its log-probability</dt><dd>{{printf "%.2f" .LogProb}}</dd>
{{if .ModelOutput}}<dt>model output</dt><dd>{{.ModelOutput}}</dd>
{{end}}{{else}}<dt>output</dt><dd>{{.Output}}</dd>
{{if .Reference}}<dt>reference</dt><dd>{{.Reference}}</dd>
{{end}}{{end}}<dt>mean entropy</dt><dd class="entropy">{{printf "%.3f" .Entropy}}</dd>
{{if .Data}}<dt>matrix</dt><dd><a href="{{.Data}}">{{.Data}}</a></dd>
{{end}}</dl>
</div>
{{end}}</div>
<script>
(function () {
  var box = document.getElementById("entries");
  function sortBy(order) {
    var entries = Array.prototype.slice.call(box.children);
    entries.sort(function (a, b) {
      if (order === "entropy-asc") return a.dataset.entropy - b.dataset.entropy || a.dataset.index - b.dataset.index;
      if (order === "entropy-desc") return b.dataset.entropy - a.dataset.entropy || a.dataset.index - b.dataset.index;
      return a.dataset.index - b.dataset.index;
    });
    entries.forEach(function (e) { box.appendChild(e); });
    document.querySelectorAll(".controls button").forEach(function (b) {
      b.classList.toggle("active", b.dataset.order === order);
    });
  }
  document.querySelectorAll(".controls button").forEach(function (b) {
    b.addEventListener("click", function () { sortBy(b.dataset.order); });
  });
  sortBy(location.hash.slice(1) || "input");
})();
</script>
</body>
</html>
`

// WriteGalleryDir writes, in dir (created if needed), every map as NNNN.png and NNNN.json (numbered from 0001
// in the given order) and index.html showing them all (see WriteGallery). It returns the first error. progress,
// when set, is told the number of maps written, after each one.
func WriteGalleryDir(dir, title string, maps []*Map, progress func(written int)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("heatmap: %w", err)
	}
	entries := make([]GalleryEntry, len(maps))
	for i, m := range maps {
		entries[i] = GalleryEntry{Map: m, Image: fmt.Sprintf("%04d.png", i+1), Data: fmt.Sprintf("%04d.json", i+1)}
		for _, name := range []string{entries[i].Image, entries[i].Data} {
			if err := WriteFile(filepath.Join(dir, name), m); err != nil {
				return fmt.Errorf("sentence %d: %w", i+1, err)
			}
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	return writeFileWith(filepath.Join(dir, "index.html"), func(w io.Writer) error { return WriteGallery(w, title, entries) })
}

// ErrFormat is the cause of a WriteFile error for a path whose extension names no known format.
var ErrFormat = errors.New("unknown output format (want .png, .svg, .json or .csv)")

// WriteFile writes the map to path in the format its extension names: .png, .svg, .json or .csv.
func WriteFile(path string, m *Map) error {
	var write func(io.Writer, *Map) error
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png":
		write = WritePNG
	case ".svg":
		write = WriteSVG
	case ".json":
		write = WriteJSON
	case ".csv":
		write = WriteCSV
	default:
		return fmt.Errorf("heatmap: %s: %w", path, ErrFormat)
	}
	return writeFileWith(path, func(w io.Writer) error { return write(w, m) })
}

// writeFileWith creates path, lets write fill it, and closes it, naming path in any error.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heatmap: %w", err)
	}
	buf := bufio.NewWriter(f)
	err = write(buf)
	if err == nil {
		err = buf.Flush()
	}
	if closeErr := f.Close(); err == nil && closeErr != nil {
		err = fmt.Errorf("heatmap: %w", closeErr)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
