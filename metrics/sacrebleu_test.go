package metrics

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestTokenizer13aSplitsLikeSacreBLEU(t *testing.T) {
	tests := []struct{ name, line, want string }{
		{"punctuation is split off", "Hello, world.", "Hello , world ."},
		{"periods and commas between digits stay", "Pi is 3.14, not 1,000.", "Pi is 3.14 , not 1,000 ."},
		{"a dash after a digit is split, inside a word it stays", "well-known 5-3", "well-known 5 - 3"},
		{"apostrophes stay in the word", "Don't stop", "Don't stop"},
		{"entities are unescaped first", "&quot;a&amp;b&quot;", `" a & b "`},
		{"symbols and brackets are split", "(x)+[y]/z", "( x ) + [ y ] / z"},
		{"white space collapses", "  a \t b  ", "a b"},
		{"empty line has no tokens", "", ""},
	}
	tok := NewTokenizer13a()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(tok.Tokenize(tt.line), " "); got != tt.want {
				t.Fatalf("Tokenize(%q) = %q, want %q", tt.line, got, tt.want)
			}
		})
	}
}

// The expected scores are worked out by hand in each case's comment from sacreBLEU's definition.
func TestCorpusBLEUHandComputed(t *testing.T) {
	tests := []struct {
		name       string
		hyps, refs [][]string
		smooth     Smoothing
		want       float64
		wantBP     float64
	}{
		{"empty hypothesis scores 0 with BP 0", tokens(""), tokens("a b c d"), SmoothExp, 0, 0},
		// precisions 5/5, 2/4, 1/3 and 0/2, smoothed to 1/(2·2)
		{"no 4-gram match is smoothed to 1/(2 total)", tokens("a b c d e"), tokens("a b c e d"), SmoothExp,
			100 * math.Pow(1*0.5*(1.0/3)*(1.0/4), 0.25), 1},
		{"no 4-gram match without smoothing is 0", tokens("a b c d e"), tokens("a b c e d"), SmoothNone, 0, 1},
		// 4/5, 2/4, then 0/3 → 1/(2·3) and 0/2 → 1/(4·2); 5 words against 6
		{"two unmatched orders halve again, with brevity penalty", tokens("a b c d e"), tokens("a b x d e f"), SmoothExp,
			math.Exp(1-6.0/5) * 100 * math.Pow(0.8*0.5*(1.0/6)*(1.0/8), 0.25), math.Exp(1 - 6.0/5)},
		{"brevity penalty exp(1 - r/h)", tokens("the cat sat on the"), tokens("the cat sat on the mat"), SmoothExp,
			100 * math.Exp(1-6.0/5), math.Exp(1 - 6.0/5)},
		{"longer hypothesis has BP 1", tokens("the cat sat on the mat ."), tokens("the cat sat on the mat"), SmoothExp,
			100 * math.Pow(6.0/7*5.0/6*4.0/5*3.0/4, 0.25), 1},
		{"no 4-gram at all in the corpus is 0", tokens("a b c"), tokens("a b c"), SmoothExp, 0, 1},
		{"no match at all is 0", tokens("x y z w"), tokens("a b c d"), SmoothExp, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CorpusBLEU(tt.hyps, tt.refs, tt.smooth)
			if math.Abs(got.Score-tt.want) > 1e-9 || math.Abs(got.BrevityPenalty-tt.wantBP) > 1e-12 {
				t.Fatalf("BLEU %v BP %v, want %v BP %v (%v)", got.Score, got.BrevityPenalty, tt.want, tt.wantBP, got)
			}
		})
	}
}

func TestCorpusBLEUWithoutSmoothingEqualsBLEU(t *testing.T) {
	hyps := readTokens(t, "testdata/bleu_hyps.txt")
	refs := readTokens(t, "testdata/bleu_refs.txt")
	want := BLEU(hyps, refs)
	if want == 0 {
		t.Fatal("testdata scores 0: the comparison would be empty")
	}
	if got := CorpusBLEU(hyps, refs, SmoothNone).Score; math.Abs(got-want) > 1e-9 {
		t.Fatalf("CorpusBLEU %v, BLEU %v", got, want)
	}
}

func TestBLEUScoreStringIsSacreBLEUs(t *testing.T) {
	got := CorpusBLEU(tokens("the cat sat on the"), tokens("the cat sat on the mat"), SmoothExp).String()
	want := "BLEU = 81.87 100.0/100.0/100.0/100.0 (BP = 0.819 ratio = 0.833 hyp_len = 5 ref_len = 6)"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

// chrF by hand: white space is dropped, character n-grams of orders 1..6 counted, precision and recall averaged
// over the orders present on both sides, F = 5PR/(4P+R).
func TestChrFHandComputed(t *testing.T) {
	tests := []struct {
		name       string
		hyps, refs []string
		want       float64
	}{
		// orders 1, 2: P = (2/2 + 1/1)/2 = 1, R = (2/3 + 1/2)/2 = 7/12 → F = 5·7/12 / (4 + 7/12) = 7/11
		{"hypothesis missing a character", []string{"ab"}, []string{"abc"}, 100 * 7.0 / 11},
		{"white space does not count", []string{"a b"}, []string{"ab"}, 100},
		// pooled: order 1 hyp 4 ref 5 match 4, order 2 hyp 2 ref 3 match 2; P = 1, R = (4/5 + 2/3)/2 = 11/15
		{"statistics pool over the corpus", []string{"ab", "xy"}, []string{"abc", "xy"}, 100 * 55.0 / 71},
		{"empty hypothesis is 0", []string{""}, []string{"abc"}, 0},
		{"nothing in common is 0", []string{"xyz"}, []string{"abc"}, 0},
		{"case matters", []string{"AB"}, []string{"ab"}, 0},
		// é is one character: as "ab" against "abc", with é for c
		{"characters are code points", []string{"éa"}, []string{"éab"}, 100 * 7.0 / 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChrF(tt.hyps, tt.refs).Score; math.Abs(got-tt.want) > 1e-9 {
				t.Fatalf("chrF %v, want %v", got, tt.want)
			}
		})
	}
}

func TestSignaturesNameTheSettings(t *testing.T) {
	if got, want := BLEUSignature(1, false, "13a", SmoothExp, "attend-x"), "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-x"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := BLEUSignature(1, true, "regex", SmoothNone, "v"), "nrefs:1|case:lc|eff:no|tok:regex|smooth:none|version:v"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got, want := ChrFSignature(1, "v"), "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:v"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// readLines reads a testdata file of untokenized sentences, one per line.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// TestMultiReferenceScoresAreSacreBLEUs scores testdata/multiref_hyp.txt against one and two references. The
// expected figures are sacreBLEU 2.5's (BLEU() and CHRF() corpus_score with default settings, references given
// as [ref1], [ref2], [ref1, ref2] and [ref2, ref1]).
func TestMultiReferenceScoresAreSacreBLEUs(t *testing.T) {
	hyps := readLines(t, "testdata/multiref_hyp.txt")
	ref1, ref2 := readLines(t, "testdata/multiref_ref1.txt"), readLines(t, "testdata/multiref_ref2.txt")
	tok := NewTokenizer13a()
	for _, tt := range []struct {
		name       string
		refs       [][]string // refs[k][i]: reference k of sentence i
		bleu, chrf float64
		bleuText   string
	}{
		{"ref1", [][]string{ref1}, 21.28312788613332, 43.97053360989482, "BLEU = 21.28 66.7/37.6/18.5/7.2 (BP = 0.884 ratio = 0.890 hyp_len = 105 ref_len = 118)"},
		{"ref2", [][]string{ref2}, 43.290410555425325, 71.04795829589622, "BLEU = 43.29 77.1/54.8/35.8/23.2 (BP = 1.000 ratio = 1.082 hyp_len = 105 ref_len = 97)"},
		{"ref1 and ref2", [][]string{ref1, ref2}, 56.81518003878492, 72.4312010240166, "BLEU = 56.82 93.3/76.3/51.9/30.4 (BP = 0.981 ratio = 0.981 hyp_len = 105 ref_len = 107)"},
		{"ref2 and ref1", [][]string{ref2, ref1}, 56.81518003878492, 72.4312010240166, "BLEU = 56.82 93.3/76.3/51.9/30.4 (BP = 0.981 ratio = 0.981 hyp_len = 105 ref_len = 107)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var bc BLEUCounts
			var cc ChrFCounts
			for i, hyp := range hyps {
				var toks [][]string
				var texts []string
				for _, refs := range tt.refs {
					toks, texts = append(toks, tok.Tokenize(refs[i])), append(texts, refs[i])
				}
				bc = bc.Add(SentenceBLEUCounts(tok.Tokenize(hyp), toks...))
				cc = cc.Add(SentenceChrFCounts(hyp, texts...))
			}
			b := BLEUFromCounts(bc, SmoothExp)
			if math.Abs(b.Score-tt.bleu) > 1e-9 || b.String() != tt.bleuText {
				t.Errorf("BLEU %v\n%s\nwant %v\n%s", b.Score, b, tt.bleu, tt.bleuText)
			}
			if c := ChrFFromCounts(cc).Score; math.Abs(c-tt.chrf) > 1e-9 {
				t.Errorf("chrF %v, want %v", c, tt.chrf)
			}
		})
	}
}

// The closest reference length decides the brevity penalty: the shorter of two equally close ones.
func TestSentenceBLEUCountsTakesTheClosestReferenceLength(t *testing.T) {
	hyp := strings.Fields("a b c d e")
	for _, tt := range []struct {
		refs []string
		want int
	}{
		{[]string{"a b c", "a b c d e f g h"}, 3},   // 2 and 3 away
		{[]string{"a b c d", "a b c d e f"}, 4},     // 1 away either way: the shorter
		{[]string{"a b c d e f", "a b c d"}, 4},     // in either order
		{[]string{"a b c d e f g", "a b c d e"}, 5}, // exact
	} {
		var refs [][]string
		for _, r := range tt.refs {
			refs = append(refs, strings.Fields(r))
		}
		if got := SentenceBLEUCounts(hyp, refs...).RefLen; got != tt.want {
			t.Errorf("references %q: length %d, want %d", tt.refs, got, tt.want)
		}
	}
	// Clipping takes the most any one reference has: "a a" matches twice against "a x" and "a a", not three times.
	if got := SentenceBLEUCounts(strings.Fields("a a a"), strings.Fields("a x"), strings.Fields("a a")).Matches[0]; got != 2 {
		t.Errorf("unigram matches %d, want 2", got)
	}
}
