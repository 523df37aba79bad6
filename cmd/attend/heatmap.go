package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/heatmap"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/spf13/cobra"
)

// heatmapOptions is everything `attend heatmap` reads from its command line.
type heatmapOptions struct {
	models                        []string // --model, one or several (an ensemble)
	text, input, ref, out, outDir string
	limit                         int
	tokenized, alignment          bool
	decode                        decodeFlags
}

func newHeatmapCmd() *cobra.Command {
	var o heatmapOptions
	cmd := &cobra.Command{
		Use:   "heatmap --model CKPT [--model CKPT...] (--text SENTENCE --out FILE | --input FILE --out-dir DIR)",
		Short: "Draw where the model looked: attention heat maps (PNG, SVG), matrices (JSON, CSV), an HTML gallery",
		Long: `Heatmap translates a sentence (--text) and writes its attention to --out: a heat map picture (.png or
.svg; output words down the rows, </s> last, source words along the columns) or the matrix (.json with the
tokens and the model, or .csv). With --ref, the reference translation is scored by teacher forcing instead and
its attention is drawn: where the model looks when it reads the given words.

With --input FILE (one sentence per line) and --out-dir DIR, it writes DIR/0001.png, DIR/0001.json, … for the
first --limit sentences and DIR/index.html, a gallery showing each picture with its sentence, output, reference
(--ref FILE, line-aligned) and mean attention entropy, sortable by entropy; open it in a browser, no server
needed. Labels use the embedded Liberation Sans: Latin scripts (German, French, Czech, Vietnamese, …), Greek and
Cyrillic render; a character of another script (CJK, Arabic, Thai, …) is drawn as □, and a note says so (the
.json and .csv have the words as they are). An SVG's labels are text that asks for Liberation Sans, or Arial,
which has its metrics; no font is embedded.

The colour scale is magma, reversed: pale yellow for weight 0, black for 1, perceptually uniform. A picture
draws at most twice as many output rows as the sentence has words (and at least 20): a longer output, a
translation that ran away to the length limit, is cut, with a note under the map and on standard error.

A model trained on subwords (data.subword bpe) is drawn in words: a source word's column sums its subwords'
weights and an output word's row averages its subwords' rows. With --tokenized the text is taken as already
tokenized: its words are split on white space only and drawn as given ("Mr." stays one column), each the sum of
the model's tokens it splits into; the matrix is then the one translate --tokenized --attention writes for the
line.

Search: the sentence drawn is the one translate writes with the same search flags: beam search of width --beam
(5, translate's default) with --alpha, --beta, --max-len, --max-len-ratio, --replace-unk and --shortlist as
translate reads them, or greedy search with --beam 1. --max-len also bounds the sentences and references
drawn (default: the larger of the checkpoint's data.max_len and decode.max_len): a longer line is skipped with
a warning naming it, since a picture grows with the product of the two lengths. Several --model flags translate
with their ensemble, as translate does: the words are the ensemble's, the attention drawn is the first model's
(with --ref, the first model's on the reference).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runHeatmap(cmd, o) },
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.models, "model", "m", nil, modelFlagHelp)
	fl.StringVar(&o.text, "text", "", "one sentence to draw (with --out)")
	fl.StringVarP(&o.input, "input", "i", "", "file of sentences, one per line (with --out-dir)")
	fl.StringVar(&o.ref, "ref", "", "reference: a sentence with --text, a line-aligned file with --input; its attention is drawn")
	fl.StringVarP(&o.out, "out", "o", "", "output file: .png, .svg, .json or .csv")
	fl.StringVar(&o.outDir, "out-dir", "", "directory for the pictures and index.html")
	fl.IntVar(&o.limit, "limit", 50, "with --input, draw at most this many sentences (0: all)")
	o.decode.registerSearch(fl)
	fl.BoolVar(&o.tokenized, "tokenized", false, "the text is tokenized: its words are split on white space only")
	fl.BoolVar(&o.alignment, "alignment", false, "draw a model's alignment attention (model.full_context_alignment), which knows each output word, instead of the decoder's attention")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}

func runHeatmap(cmd *cobra.Command, o heatmapOptions) error {
	switch {
	case (o.text == "") == (o.input == ""):
		return fmt.Errorf("give either --text SENTENCE or --input FILE")
	case o.text != "" && (o.out == "" || o.outDir != ""):
		return fmt.Errorf("--text writes one file: give --out FILE (.png, .svg, .json or .csv), not --out-dir")
	case o.input != "" && (o.outDir == "" || o.out != ""):
		return fmt.Errorf("--input writes a gallery: give --out-dir DIR, not --out")
	case o.limit < 0:
		return fmt.Errorf("--limit is %d; want 0 (all) or more", o.limit)
	}
	if o.out != "" {
		switch strings.ToLower(filepath.Ext(o.out)) {
		case ".png", ".svg", ".json", ".csv":
		default:
			return fmt.Errorf("--out %s: %w", o.out, heatmap.ErrFormat)
		}
		if err := app.CheckOutputs([]app.NamedPath{{Role: "--out", Path: o.out, Example: "attention" + filepath.Ext(o.out)}},
			modelInputs(o.models)); err != nil {
			return err
		}
	} else {
		// The gallery: DIR/index.html, and DIR/0001.png, DIR/0001.json, … for the sentences.
		outputs := []app.NamedPath{{Role: "the gallery page", Path: filepath.Join(o.outDir, "index.html")},
			{Role: "the gallery's pictures", Path: filepath.Join(o.outDir, "[0-9][0-9][0-9][0-9]*.png"), Pattern: true},
			{Role: "the gallery's matrices", Path: filepath.Join(o.outDir, "[0-9][0-9][0-9][0-9]*.json"), Pattern: true}}
		inputs := append(modelInputs(o.models), app.NamedPath{Role: "--input", Path: o.input}, app.NamedPath{Role: "--ref", Path: o.ref})
		if err := app.CheckOutputs(outputs, inputs); err != nil {
			return err
		}
	}
	ck, ens, err := loadModels(o.models)
	if err != nil {
		return err
	}
	var tok data.Tokenizer = ck.Config.Data.Tokenizer()
	if o.tokenized {
		tok = data.WhitespaceTokenizer{}
	}
	decode, err := o.decode.options(cmd, o.models[0], ck, ens)
	if err != nil {
		return err
	}
	decode.Alignment = o.alignment
	req := app.HeatmapRequest{Model: ck, ModelPath: o.models[0], Tokenized: o.tokenized, Decode: decode}
	// Sentences longer than this are not drawn: a picture and a forced reference grow with the product of
	// the two lengths.
	limit := app.LengthLimit(ck.Config)
	if o.decode.maxLen > 0 {
		limit = o.decode.maxLen
	}
	if o.text != "" {
		req.Sources = [][]string{tok.Tokenize(o.text)}
		if len(req.Sources[0]) == 0 {
			return fmt.Errorf("--text has no words")
		}
		if o.ref != "" {
			req.Refs = [][]string{tok.Tokenize(o.ref)}
		}
		if long := app.LongPairs(req.Sources, req.Refs, limit); len(long) > 0 {
			return fmt.Errorf("--text and --ref have %d and %d tokens, more than the length limit %d; --max-len raises it", long[0].SrcLen, long[0].TgtLen, limit)
		}
		maps, err := app.Heatmaps(cmd.Context(), req)
		if err != nil {
			return err
		}
		if err := heatmap.WriteFile(o.out, maps[0]); err != nil {
			return err
		}
		if ext := strings.ToLower(filepath.Ext(o.out)); ext == ".png" || ext == ".svg" {
			for _, note := range maps[0].Notes() {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %s\n", o.out, note)
			}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", o.out, strings.Join(maps[0].Output, " "))
		return nil
	}
	if req.Sources, err = readSentences(o.input, tok); err != nil {
		return err
	}
	if o.ref != "" {
		if req.Refs, err = readSentences(o.ref, tok); err != nil {
			return err
		}
		if len(req.Refs) != len(req.Sources) {
			return fmt.Errorf("--ref %s has %s but --input %s has %d", o.ref, plural.Count(len(req.Refs), "line"), o.input, len(req.Sources))
		}
	}
	// Lines with no words (or, with references, an empty reference) have nothing to draw.
	var sources, refs [][]string
	var lines []int
	skipped := 0
	long := app.LongPairs(req.Sources, req.Refs, limit)
	files := o.input
	if o.ref != "" {
		files += " and " + o.ref
	}
	app.WarnLongPairs(cmd.ErrOrStderr(), long, limit, files, "not drawn")
	for i, s := range req.Sources {
		if len(long) > 0 && long[0].Line == i+1 {
			long = long[1:]
			continue
		}
		if len(s) == 0 || (req.Refs != nil && len(req.Refs[i]) == 0) {
			skipped++
			continue
		}
		if o.limit > 0 && len(sources) == o.limit {
			break
		}
		sources = append(sources, s)
		lines = append(lines, i+1)
		if req.Refs != nil {
			refs = append(refs, req.Refs[i])
		}
	}
	req.Sources, req.Refs = sources, refs
	progress := progressOf(cmd)
	translating := progress.start("translating "+o.input, int64(len(sources)), "sentence")
	req.Decode.Progress = translating
	maps, err := app.Heatmaps(cmd.Context(), req)
	translating.End()
	if err != nil {
		return err
	}
	for i, m := range maps {
		m.Line = lines[i]
	}
	title := fmt.Sprintf("attention of %s on %s", filepath.Base(o.models[0]), filepath.Base(o.input))
	if len(o.models) > 1 {
		title = fmt.Sprintf("attention of %s, the first of an ensemble of %d models, on %s", filepath.Base(o.models[0]), len(o.models), filepath.Base(o.input))
	}
	drawing := progress.start("drawing "+filepath.Join(o.outDir, "*.png"), int64(len(maps)), "picture")
	err = heatmap.WriteGalleryDirProgress(o.outDir, title, maps, func(n int) { drawing.Set(int64(n)) })
	drawing.End()
	if err != nil {
		return err
	}
	for i, m := range maps {
		for _, note := range m.Notes() {
			fmt.Fprintf(cmd.ErrOrStderr(), "note: %s (line %d): %s\n", filepath.Join(o.outDir, fmt.Sprintf("%04d.png", i+1)), m.Line, note)
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s drawn (%s skipped): %s\n", plural.Count(len(maps), "sentence"), plural.Count(skipped, "empty line"), filepath.Join(o.outDir, "index.html"))
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
