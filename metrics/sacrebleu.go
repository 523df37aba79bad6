package metrics

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Smoothing names how CorpusBLEU scores an n-gram order without a single match.
type Smoothing string

// The smoothings CorpusBLEU knows, named as sacreBLEU names them.
const (
	// SmoothNone leaves a zero precision at zero, so the whole score is 0 (the figure of BLEU, as the PyTorch reference computes it).
	SmoothNone Smoothing = "none"
	// SmoothExp is sacreBLEU's default (mteval-v13a's): the k-th order without a match counts as 1/(2^k · total).
	SmoothExp Smoothing = "exp"
)

// BLEUCounts are BLEU's sufficient statistics for one sentence or, summed, for a corpus: the token lengths of
// hypothesis and reference and, for each n-gram order, the clipped matches and the hypothesis n-grams. A corpus
// score depends only on the sum of its sentences' counts, which is what lets bootstrap resampling rescore a
// resampled test set without counting n-grams again.
type BLEUCounts struct {
	HypLen, RefLen  int
	Matches, Totals [bleuOrder]int
}

// Add returns the sum of c and d.
func (c BLEUCounts) Add(d BLEUCounts) BLEUCounts {
	c.HypLen += d.HypLen
	c.RefLen += d.RefLen
	for n := range bleuOrder {
		c.Matches[n] += d.Matches[n]
		c.Totals[n] += d.Totals[n]
	}
	return c
}

// SentenceBLEUCounts counts one tokenized hypothesis against its reference or, given several, against all of
// them as sacreBLEU does (BLEU._extract_reference_info and _get_closest_ref_len): an n-gram's matches are
// clipped to the most times any one reference has it, and the reference length is that of the reference closest
// in length to the hypothesis (the shorter of two equally close). Without a reference nothing matches and the
// reference length is 0.
func SentenceBLEUCounts(hyp []string, refs ...[]string) BLEUCounts {
	c := BLEUCounts{HypLen: len(hyp), RefLen: closestLength(len(hyp), refs)}
	for order := 1; order <= bleuOrder; order++ {
		var refCounts map[[bleuOrder]string]int
		for k, ref := range refs {
			counts := ngramCounts(ref, order)
			if k == 0 {
				refCounts = counts
				continue
			}
			for gram, n := range counts {
				refCounts[gram] = max(refCounts[gram], n)
			}
		}
		for gram, count := range ngramCounts(hyp, order) {
			c.Matches[order-1] += min(count, refCounts[gram])
		}
		c.Totals[order-1] = max(len(hyp)-order+1, 0)
	}
	return c
}

// closestLength is the length of the reference closest in length to a hypothesis of hypLen tokens, the shorter
// one of two equally close; 0 without references.
func closestLength(hypLen int, refs [][]string) int {
	best := -1
	for _, ref := range refs {
		d, bd := abs(hypLen-len(ref)), abs(hypLen-best)
		if best < 0 || d < bd || d == bd && len(ref) < best {
			best = len(ref)
		}
	}
	return max(best, 0)
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// BLEUScore is a corpus BLEU with the statistics behind it. Precisions are percentages after smoothing.
type BLEUScore struct {
	Score          float64 // 0-100
	Precisions     [bleuOrder]float64
	BrevityPenalty float64
	BLEUCounts
}

// String prints the score as sacreBLEU does: "BLEU = 34.76 65.2/41.0/27.2/18.5 (BP = 0.959 ratio = 0.960
// hyp_len = 12554 ref_len = 13080)".
func (s BLEUScore) String() string {
	precs := make([]string, bleuOrder)
	for i, p := range s.Precisions {
		precs[i] = fmt.Sprintf("%.1f", p)
	}
	ratio := 0.0
	if s.RefLen > 0 {
		ratio = float64(s.HypLen) / float64(s.RefLen)
	}
	return fmt.Sprintf("BLEU = %.2f %s (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)",
		s.Score, strings.Join(precs, "/"), s.BrevityPenalty, ratio, s.HypLen, s.RefLen)
}

// CorpusBLEU is corpus BLEU of tokenized hyps against refs (one reference each; SentenceBLEUCounts counts
// against several) as sacreBLEU 2 computes it
// (BLEU.compute_bleu): BLEUFromCounts of the sentences' counts summed. CorpusBLEU panics if hyps and refs differ
// in length or smooth is unknown.
func CorpusBLEU(hyps, refs [][]string, smooth Smoothing) BLEUScore {
	return BLEUFromCounts(sumCounts("CorpusBLEU", hyps, refs, SentenceBLEUCounts), smooth)
}

// sumCounts is the sum of count of each hypothesis against its one reference; name names the caller in the
// panic of hyps and refs that differ in length.
func sumCounts[T any, C Counts[C]](name string, hyps, refs []T, count func(hyp T, refs ...T) C) C {
	if len(hyps) != len(refs) {
		panic(fmt.Sprintf("metrics: %s of %d hypotheses against %d references", name, len(hyps), len(refs)))
	}
	var sum C
	for i, hyp := range hyps {
		sum = sum.Add(count(hyp, refs[i]))
	}
	return sum
}

// BLEUFromCounts scores a corpus's summed counts as sacreBLEU 2 does: BP = 1 when the hypotheses are at least as
// long as the references in total, exp(1 - r/h) when shorter, and 0 when h = 0; the score is BP times the
// geometric mean of the four precisions, where an order with no hypothesis n-gram at all makes the score 0, and
// an order with n-grams but no match is 0 (SmoothNone) or 1/(2^k·total) for the k-th such order (SmoothExp).
// A corpus without any match scores 0. With SmoothNone it equals BLEU up to rounding. BLEUFromCounts panics if
// smooth is unknown.
func BLEUFromCounts(c BLEUCounts, smooth Smoothing) BLEUScore {
	if smooth != SmoothNone && smooth != SmoothExp {
		panic(fmt.Sprintf("metrics: unknown smoothing %q", smooth))
	}
	s := BLEUScore{BLEUCounts: c}
	s.BrevityPenalty = 1
	if s.HypLen < s.RefLen {
		s.BrevityPenalty = 0
		if s.HypLen > 0 {
			s.BrevityPenalty = math.Exp(1 - float64(s.RefLen)/float64(s.HypLen))
		}
	}
	anyMatch := false
	for _, m := range s.Matches {
		anyMatch = anyMatch || m > 0
	}
	if !anyMatch {
		return s
	}
	unmatched := 1.0 // sacreBLEU's smooth_mteval
	for n := range bleuOrder {
		if s.Totals[n] == 0 {
			break // no n-grams of this order or higher: their precisions stay 0
		}
		switch {
		case s.Matches[n] > 0:
			s.Precisions[n] = 100 * float64(s.Matches[n]) / float64(s.Totals[n])
		case smooth == SmoothExp:
			unmatched *= 2
			s.Precisions[n] = 100 / (unmatched * float64(s.Totals[n]))
		}
	}
	logSum := 0.0
	for _, p := range s.Precisions {
		if p == 0 {
			return s // sacreBLEU adds log(0) as -9999999999: the score is 0
		}
		logSum += math.Log(p)
	}
	s.Score = s.BrevityPenalty * math.Exp(logSum/bleuOrder)
	return s
}

// Patterns of sacreBLEU's 13a tokenizer (tokenizers/tokenizer_re.py), applied in order.
const (
	// Most ASCII symbols: { to ~, [ to `, space to &, ( to +, : to @, and /.
	pattern13aSymbols = "([\\{-~\\[-` -&\\(-\\+:-@/])"
	// A period or comma not preceded by a digit, then one not followed by a digit, then a dash after a digit.
	pattern13aPeriodAfter  = `([^0-9])([\.,])`
	pattern13aPeriodBefore = `([\.,])([^0-9])`
	pattern13aDash         = `([0-9])(-)`
)

// Tokenizer13a is sacreBLEU's default tokenizer "13a" (mteval-v13a.pl's): it unescapes &quot; &amp; &lt; &gt;,
// puts spaces around ASCII punctuation and symbols, around periods and commas except between digits, and after
// a dash that follows a digit, then collapses white space. Build it with NewTokenizer13a; it is safe for
// concurrent use.
type Tokenizer13a struct {
	rules []*regexp.Regexp
	repl  []string
}

// NewTokenizer13a compiles the 13a tokenizer.
func NewTokenizer13a() *Tokenizer13a {
	return &Tokenizer13a{
		rules: []*regexp.Regexp{regexp.MustCompile(pattern13aSymbols), regexp.MustCompile(pattern13aPeriodAfter),
			regexp.MustCompile(pattern13aPeriodBefore), regexp.MustCompile(pattern13aDash)},
		repl: []string{" ${1} ", "${1} ${2} ", " ${1} ${2}", "${1} ${2} "},
	}
}

// Tokenize returns the 13a tokens of line.
func (t *Tokenizer13a) Tokenize(line string) []string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.NewReplacer("&quot;", `"`, "&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(line)
	}
	line = " " + line + " "
	for i, re := range t.rules {
		line = re.ReplaceAllString(line, t.repl[i])
	}
	return strings.Fields(line)
}

// chrF settings: sacreBLEU's CHRF defaults (chrF2).
const (
	chrFCharOrder = 6
	chrFBeta      = 2
)

// ChrFCounts are chrF's sufficient statistics for one sentence or, summed, for a corpus: for each character
// order 1..6, the hypothesis n-grams, the reference n-grams and the matched (clipped) n-grams.
type ChrFCounts struct {
	HypGrams, RefGrams, Matching [chrFCharOrder]int
}

// Add returns the sum of c and d.
func (c ChrFCounts) Add(d ChrFCounts) ChrFCounts {
	for n := range chrFCharOrder {
		c.HypGrams[n] += d.HypGrams[n]
		c.RefGrams[n] += d.RefGrams[n]
		c.Matching[n] += d.Matching[n]
	}
	return c
}

// SentenceChrFCounts counts the character n-grams of one hypothesis against its reference (untokenized text;
// white space is removed) or, given several, against the one whose sentence chrF (ChrFFromCounts of these
// counts alone) is highest, the first of equals, as sacreBLEU's CHRF._compute_segment_statistics chooses. Without
// a reference it counts the hypothesis' n-grams only.
func SentenceChrFCounts(hyp string, refs ...string) ChrFCounts {
	h := []rune(strings.Join(strings.Fields(hyp), ""))
	hypGrams := make([]map[string]int, chrFCharOrder)
	for order := 1; order <= chrFCharOrder; order++ {
		hypGrams[order-1] = charGrams(h, order)
	}
	count := func(ref string) ChrFCounts {
		var c ChrFCounts
		r := []rune(strings.Join(strings.Fields(ref), ""))
		for order := 1; order <= chrFCharOrder; order++ {
			refCounts := charGrams(r, order)
			for gram, n := range hypGrams[order-1] {
				c.Matching[order-1] += min(n, refCounts[gram])
			}
			c.HypGrams[order-1] = max(len(h)-order+1, 0)
			c.RefGrams[order-1] = max(len(r)-order+1, 0)
		}
		return c
	}
	if len(refs) == 0 {
		return count("")
	}
	best, bestScore := ChrFCounts{}, -1.0
	for _, ref := range refs {
		c := count(ref)
		if score := ChrFFromCounts(c).Score; score > bestScore {
			best, bestScore = c, score
		}
	}
	return best
}

// ChrFScore is a corpus chrF with the counts behind it, pooled over the corpus.
type ChrFScore struct {
	Score float64 // 0-100
	ChrFCounts
}

// ChrF is corpus chrF2 (Popović 2015) of hyps against refs (one reference each, untokenized text;
// SentenceChrFCounts counts against several) as sacreBLEU 2
// computes it by default: ChrFFromCounts of the sentences' counts summed. Case is kept. ChrF panics if hyps and
// refs differ in length.
func ChrF(hyps, refs []string) ChrFScore {
	return ChrFFromCounts(sumCounts("ChrF", hyps, refs, SentenceChrFCounts))
}

// ChrFFromCounts scores a corpus's summed counts: white space was removed, character n-grams of orders 1 to 6
// (Unicode code points) were counted per sentence and the clipped matches pooled; precision and recall are
// averaged over the orders that have n-grams on both sides, and the score is 100 · (1+β²)·P·R / (β²·P + R) with
// β = 2 (0 when P + R = 0).
func ChrFFromCounts(c ChrFCounts) ChrFScore {
	s := ChrFScore{ChrFCounts: c}
	var precision, recall float64
	effective := 0
	for n := range chrFCharOrder {
		if s.HypGrams[n] > 0 && s.RefGrams[n] > 0 {
			precision += float64(s.Matching[n]) / float64(s.HypGrams[n])
			recall += float64(s.Matching[n]) / float64(s.RefGrams[n])
			effective++
		}
	}
	if effective == 0 || precision+recall == 0 {
		return s
	}
	precision /= float64(effective)
	recall /= float64(effective)
	const factor = chrFBeta * chrFBeta
	s.Score = 100 * (1 + factor) * precision * recall / (factor*precision + recall)
	return s
}

// charGrams counts the character n-grams of one order in chars.
func charGrams(chars []rune, order int) map[string]int {
	counts := make(map[string]int, len(chars))
	for start := 0; start+order <= len(chars); start++ {
		counts[string(chars[start:start+order])]++
	}
	return counts
}

// BLEUSignature is the settings line sacreBLEU prints beside a BLEU score, such as
// "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:attend-v0.3.0". nrefs is the number of references of
// each sentence, tok the tokenizer's name ("13a", or "regex" for attend's \w+|[^\w\s]) and version names the
// program that computed it.
func BLEUSignature(nrefs int, lowercase bool, tok string, smooth Smoothing, version string) string {
	return fmt.Sprintf("nrefs:%d|case:%s|eff:no|tok:%s|smooth:%s|version:%s", nrefs, caseName(lowercase), tok, smooth, version)
}

// ChrFSignature is the settings line sacreBLEU prints beside a chrF score:
// "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:...".
func ChrFSignature(nrefs int, version string) string {
	return fmt.Sprintf("nrefs:%d|case:mixed|eff:yes|nc:%d|nw:0|space:no|version:%s", nrefs, chrFCharOrder, version)
}

func caseName(lowercase bool) string {
	if lowercase {
		return "lc"
	}
	return "mixed"
}
