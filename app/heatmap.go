package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
)

// HeatmapOptions is everything `attend heatmap` reads from its command line: one sentence (Text, with Ref) drawn
// to the file Out, or a file of sentences (Input, with a file of references Ref) drawn into a gallery in OutDir.
type HeatmapOptions struct {
	Streams
	Models                        []string // --model, one or several (an ensemble)
	Text, Input, Ref, Out, OutDir string
	Limit                         int // with Input: draw at most this many sentences (0: all)
	// Tokenized splits the text on white space only; Alignment draws a model's alignment attention.
	Tokenized, Alignment bool
	Search               SearchFlags
}

// RunHeatmap checks o, loads the models, and draws the attention of o.Text into o.Out, or of the sentences of
// o.Input into a gallery in o.OutDir; what it wrote is reported on o.Stdout, notes and skipped lines on
// o.Stderr.
func RunHeatmap(ctx context.Context, o HeatmapOptions) error {
	switch {
	case (o.Text == "") == (o.Input == ""):
		return fmt.Errorf("give either --text SENTENCE or --input FILE")
	case o.Text != "" && (o.Out == "" || o.OutDir != ""):
		return fmt.Errorf("--text writes one file: give --out FILE (.png, .svg, .json or .csv), not --out-dir")
	case o.Input != "" && (o.OutDir == "" || o.Out != ""):
		return fmt.Errorf("--input writes a gallery: give --out-dir DIR, not --out")
	case o.Limit < 0:
		return fmt.Errorf("--limit is %d; want 0 (all) or more", o.Limit)
	}
	if o.Out != "" {
		switch strings.ToLower(filepath.Ext(o.Out)) {
		case ".png", ".svg", ".json", ".csv":
		default:
			return fmt.Errorf("--out %s: %w", o.Out, heatmap.ErrFormat)
		}
		if err := CheckOutputs([]NamedPath{{Role: "--out", Path: o.Out, Example: "attention" + filepath.Ext(o.Out)}},
			namedPaths("--model", o.Models)); err != nil {
			return err
		}
	} else {
		// The gallery: DIR/index.html, and DIR/0001.png, DIR/0001.json, … for the sentences.
		outputs := []NamedPath{{Role: "the gallery page", Path: filepath.Join(o.OutDir, "index.html")},
			{Role: "the gallery's pictures", Path: filepath.Join(o.OutDir, "[0-9][0-9][0-9][0-9]*.png"), Pattern: true},
			{Role: "the gallery's matrices", Path: filepath.Join(o.OutDir, "[0-9][0-9][0-9][0-9]*.json"), Pattern: true}}
		inputs := append(namedPaths("--model", o.Models), NamedPath{Role: "--input", Path: o.Input}, NamedPath{Role: "--ref", Path: o.Ref})
		if err := CheckOutputs(outputs, inputs); err != nil {
			return err
		}
	}
	ck, ens, err := LoadModels(o.Models)
	if err != nil {
		return err
	}
	if o.Alignment && !ck.Model.HasAlignment() {
		// Drawing the decoder's attention under --alignment would pass it off as the alignment attention.
		return fmt.Errorf("--alignment: %s has no alignment attention (it was trained without model.full_context_alignment); leave out --alignment to draw its decoder's attention",
			o.Models[0])
	}
	var tok data.Tokenizer = ck.Config.Data.Tokenizer()
	if o.Tokenized {
		tok = data.WhitespaceTokenizer{}
	}
	decode, err := o.Search.Options(o.Stderr, o.Models[0], ck, ens)
	if err != nil {
		return err
	}
	decode.Alignment = o.Alignment
	req := HeatmapRequest{Model: ck, ModelPath: o.Models[0], Tokenized: o.Tokenized, Decode: decode}
	// Sentences longer than this are not drawn: a picture and a forced reference grow with the product of
	// the two lengths.
	limit := o.Search.lengthLimit(ck.Config)
	if o.Text != "" {
		req.Sources = [][]string{tok.Tokenize(o.Text)}
		if len(req.Sources[0]) == 0 {
			return fmt.Errorf("--text has no words")
		}
		if o.Ref != "" {
			req.Refs = [][]string{tok.Tokenize(o.Ref)}
		}
		if long := LongPairs(req.Sources, req.Refs, limit); len(long) > 0 {
			return fmt.Errorf("--text and --ref have %d and %d tokens, more than the length limit %d; --max-len raises it", long[0].SrcLen, long[0].TgtLen, limit)
		}
		maps, err := Heatmaps(ctx, req)
		if err != nil {
			return err
		}
		if err := heatmap.WriteFile(o.Out, maps[0]); err != nil {
			return err
		}
		if ext := strings.ToLower(filepath.Ext(o.Out)); ext == ".png" || ext == ".svg" {
			for _, note := range maps[0].Notes() {
				fmt.Fprintf(o.Stderr, "note: %s: %s\n", o.Out, note)
			}
		}
		fmt.Fprintf(o.Stdout, "%s: %s\n", o.Out, strings.Join(maps[0].Output, " "))
		return nil
	}
	if req.Sources, err = readSentences(o.Input, tok); err != nil {
		return err
	}
	if o.Ref != "" {
		if req.Refs, err = readSentences(o.Ref, tok); err != nil {
			return err
		}
		if len(req.Refs) != len(req.Sources) {
			return fmt.Errorf("--ref %s has %s but --input %s has %d", o.Ref, plural.Count(len(req.Refs), "line"), o.Input, len(req.Sources))
		}
	}
	// Lines with no words (or, with references, an empty reference) have nothing to draw.
	var sources, refs [][]string
	var lines []int
	skipped := 0
	long := LongPairs(req.Sources, req.Refs, limit)
	files := o.Input
	if o.Ref != "" {
		files += " and " + o.Ref
	}
	WarnLongPairs(o.Stderr, long, limit, files, "not drawn")
	for i, s := range req.Sources {
		if len(long) > 0 && long[0].Line == i+1 {
			long = long[1:]
			continue
		}
		if len(s) == 0 || (req.Refs != nil && len(req.Refs[i]) == 0) {
			skipped++
			continue
		}
		if o.Limit > 0 && len(sources) == o.Limit {
			break
		}
		sources = append(sources, s)
		lines = append(lines, i+1)
		if req.Refs != nil {
			refs = append(refs, req.Refs[i])
		}
	}
	req.Sources, req.Refs = sources, refs
	translating := o.startPhase("translating "+o.Input, int64(len(sources)), "sentence")
	req.Decode.Progress = translating
	maps, err := Heatmaps(ctx, req)
	translating.End()
	if err != nil {
		return err
	}
	for i, m := range maps {
		m.Line = lines[i]
	}
	title := fmt.Sprintf("attention of %s on %s", filepath.Base(o.Models[0]), filepath.Base(o.Input))
	if len(o.Models) > 1 {
		title = fmt.Sprintf("attention of %s, the first of an ensemble of %d models, on %s", filepath.Base(o.Models[0]), len(o.Models), filepath.Base(o.Input))
	}
	drawing := o.startPhase("drawing "+filepath.Join(o.OutDir, "*.png"), int64(len(maps)), "picture")
	err = heatmap.WriteGalleryDir(o.OutDir, title, maps, func(n int) { drawing.Set(int64(n)) })
	drawing.End()
	if err != nil {
		return err
	}
	for i, m := range maps {
		for _, note := range m.Notes() {
			fmt.Fprintf(o.Stderr, "note: %s (line %d): %s\n", filepath.Join(o.OutDir, fmt.Sprintf("%04d.png", i+1)), m.Line, note)
		}
	}
	fmt.Fprintf(o.Stdout, "%s drawn (%s skipped): %s\n", plural.Count(len(maps), "sentence"), plural.Count(skipped, "empty line"), filepath.Join(o.OutDir, "index.html"))
	return nil
}

// readSentences reads and tokenizes a file of sentences, one per line (.gz is read directly).
func readSentences(path string, tok data.Tokenizer) ([][]string, error) {
	f, err := data.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return data.ReadLines(f, path, tok)
}
