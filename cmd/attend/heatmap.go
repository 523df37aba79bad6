package main

import (
	"github.com/attend-nmt/attend/app"
	"github.com/spf13/cobra"
)

func newHeatmapCmd() *cobra.Command {
	var o app.HeatmapOptions
	var decode decodeFlags
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Streams, o.Search = streamsOf(cmd), decode.given(cmd)
			return app.RunHeatmap(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.Models, "model", "m", nil, modelFlagHelp)
	fl.StringVar(&o.Text, "text", "", "one sentence to draw (with --out)")
	fl.StringVarP(&o.Input, "input", "i", "", "file of sentences, one per line (with --out-dir)")
	fl.StringVar(&o.Ref, "ref", "", "reference: a sentence with --text, a line-aligned file with --input; its attention is drawn")
	fl.StringVarP(&o.Out, "out", "o", "", "output file: .png, .svg, .json or .csv")
	fl.StringVar(&o.OutDir, "out-dir", "", "directory for the pictures and index.html")
	fl.IntVar(&o.Limit, "limit", 50, "with --input, draw at most this many sentences (0: all)")
	decode.registerSearch(fl)
	fl.BoolVar(&o.Tokenized, "tokenized", false, "the text is tokenized: its words are split on white space only")
	fl.BoolVar(&o.Alignment, "alignment", false, "draw a model's alignment attention (model.full_context_alignment), which knows each output word, instead of the decoder's attention; refused for a model without one")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
