package main

import (
	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/bound"
	"github.com/spf13/cobra"
)

func newTranslateCmd() *cobra.Command {
	var o app.TranslateOptions
	var decode decodeFlags
	cmd := &cobra.Command{
		Use:   "translate --model CKPT [--model CKPT...] [--input FILE] [--output FILE]",
		Short: "Translate sentences with a trained model (beam search)",
		Long: `Translate reads one sentence per line (standard input, or --input; .gz is read directly), and writes
one translation per line (standard output, or --output), in order, as it goes: each batch is written as soon as
it is translated, and typed lines are answered as soon as they are entered. Ctrl-C stops it at once (status
130); what was written stays.

Attention and alignments are between words, as Marian's --alignment gives them: the white-space words of the
input line as given and of the output line as written ("Mr." is one word although the model reads "mr" and ".";
"don't" one although it wrote "don", "'" and "t"). The model's tokens (and subwords) of a word are its pieces.
--alignments FILE writes, per sentence, the links of its output words to its source words in Pharaoh format
("i-j", 0-based, source first): each output piece is linked to the source piece it attended to most
(--threshold W: to every source piece with weight at least W), and two words are linked when any of their pieces
are; </s> is never linked. --attention FILE writes, per sentence, a JSON object: "source" and "output" words,
"attention" (one row per output word and one for </s>, one column per source word: a word's column is the sum of
its pieces' columns, its row the mean of its pieces' rows, so rows sum to 1), "score" under beam search, and,
unless every word is one piece, "subwords": the same of the model's own pieces. "output" labels every row, so it
ends with "</s>" when the translation ended (as heatmap's JSON does). For a multi-head model it also has "heads", one such matrix per head
("attention" is their average; a Transformer's are the heads of the decoder block --layer chooses), and for a model with self-attention encoder layers "self_attention": per block
and head, a source × source matrix. --token-level makes both files speak of the model's tokens instead (the
input as attend's tokenizer splits it, the output tokens as --tokenized writes them).

Search: beam search of width --beam (5), or greedy search with --beam 1. --alpha divides each hypothesis'
log-probability by GNMT's length penalty ((5+length)/6)^alpha, which favours longer outputs (0.6 to 1.5 are
usual; the default is the checkpoint's decode.alpha, 0 unless its training config set one); --beta adds GNMT's coverage penalty. --n-best N writes the N best translations of every sentence, best
first, in Marian's and Moses's n-best format: "sentence number ||| translation ||| F0= score ||| score"
(numbered from 0; the one feature, F0, is the model's score, which is also the total). --max-len caps the length of a
translation and --max-len-ratio R also caps it at R times the source length. --replace-unk writes, in place of
each <unk>, the source word that the model attended to most when it produced it. --shortlist F,K scores only
the F most frequent target words and the K likeliest translations of each source word (from the lexicon that
attend train learns; attend lexicon adds one to an older model), which makes decoding about twice as fast.

Ensembles: --model given several times (--model a.ckpt --model b.ckpt ...) translates with the models
together, as Marian's and OpenNMT-py's ensembles do: at every step each model scores the next word from its
own state, and greedy or beam search ranks the words by the mean of the models' log-probabilities
(OpenNMT-py's mean; Marian's sum ranks alike), so --n-best scores are mean log-probabilities, comparable with
one model's. --beam, --n-best, --alpha, --beta, --max-len and --replace-unk work as with one model. The models
must read and write the same text (the same source and target vocabularies, subword merges and
data.lowercase); they may differ in anything else (widths, cell, attention, layers), and checkpoints that do
not are refused, naming the two and what differs. The attention (--attention, --alignments, --replace-unk,
--beta) is the first model's, as Marian takes alignments from one model: put the model whose attention you
want first; its decode settings are used too. --shortlist is refused with several models, greedy search uses
float32 products (no bfloat16), and N models take about N times as long.

Output: detokenized text (no space before punctuation, apostrophes rejoined: "a man's hat."); --tokenized
writes the model's tokens separated by spaces (they are then the output's words for --alignments and
--attention). Casing is lost when the model was trained lowercased (the checkpoint's data.lowercase, on by
default): its output is all lowercase.

Subwords: a model trained with data.subword bpe splits the input words with its stored merges and joins its
output subwords back into words, so the output, --tokenized included, is words. Its subwords are pieces of the
words like tokens (above; with --token-level, of the tokens); --replace-unk copies the most-attended source
subword, "@@" and all.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Streams, o.Search, o.ThresholdGiven = streamsOf(cmd), decode.given(cmd), cmd.Flags().Changed("threshold")
			// Progress on standard error, unless lines are typed in, or the translations show on the same terminal.
			if (o.Input == "" || o.Input == "-") && isTerminal(o.Stdin) || (o.Output == "" || o.Output == "-") && isTerminal(o.Stdout) {
				o.Progress = progressOf(cmd).quietened()
			}
			return app.RunTranslate(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&o.Models, "model", "m", nil, modelFlagHelp)
	fl.StringVarP(&o.Input, "input", "i", "", "input file (default: standard input)")
	fl.StringVarP(&o.Output, "output", "o", "", "output file (default: standard output)")
	fl.StringVar(&o.Attention, "attention", "", "write attention matrices as JSON lines to this file")
	fl.StringVar(&o.Alignments, "alignments", "", "write links between the words of the input and output lines (Pharaoh i-j, 0-based, source first) to this file (a model trained with model.full_context_alignment links, and --attention then shows, its alignment attention)")
	floatVar(fl, &o.Threshold, "threshold", 0, bound.Between(0, 1, "0: the argmax"), "with --alignments: link every weight at or above this instead of the argmax")
	decode.register(fl)
	fl.BoolVar(&o.Tokenized, "tokenized", false, "write the output tokens separated by spaces instead of detokenized text")
	fl.BoolVar(&o.TokenLevel, "token-level", false, "--alignments and --attention between the model's tokens instead of the white-space words of the input and output lines")
	_ = cmd.MarkFlagRequired("model")
	return cmd
}
