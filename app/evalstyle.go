package app

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Thresholds of StyleWarnings: a side counts as cased or tokenized when at least styleMost of its lines are,
// and as not when at most styleFew are; in between it says nothing.
const (
	styleMost = 0.5
	styleFew  = 0.1
)

// spacedPunctuation finds what tokenized text has and detokenized text does not: a space before a closing
// punctuation mark or an English clitic ("a dog .", "man 's", "do n't").
var spacedPunctuation = regexp.MustCompile(`\s([.,!?;:%)\]}]|'(s|re|ve|ll|d|m)\b|n't\b)`)

// punctuation is what spacedPunctuation looks for, spaced or not.
var punctuation = regexp.MustCompile(`[.,!?;:%)\]}]|'(s|re|ve|ll|d|m)\b|n't\b`)

// StyleWarnings compares one system's hypotheses (hypName) with each set of references and returns what would
// make their scores mislead, each with what to do about it:
//
//   - case: no hypothesis has a capital letter while most references do (a model trained lowercased), so
//     mixed-case BLEU and chrF count every capital as an error; --tok-lc lowercases BLEU's tokens (not chrF's);
//   - tokenization: one side has a space before punctuation on most lines ("a dog ." or "man 's") and the other
//     on almost none, so 13a BLEU, which splits "man's" and "man 's" differently, counts the spaces as errors;
//     --tok-lc splits both sides the same way.
//
// tokLC and chrF say whether BLEU is --tok-lc and chrF is scored. Each warning is given once, for the first
// reference set it concerns.
func StyleWarnings(hypName string, hyps []string, refNames []string, refSets [][]string, tokLC, chrF bool) []string {
	var warnings []string
	hypCased, hypLetters := share(hyps, hasUpper, nil), share(hyps, hasLetter, nil)
	for k, refs := range refSets {
		refCased := share(refs, hasUpper, hasLetter)
		if hypCased > 0 || hypLetters == 0 || refCased < styleMost || tokLC && !chrF {
			continue
		}
		w := fmt.Sprintf("%s has no capital letter but %s has capitals on %.0f%% of its lines", hypName, refNames[k], 100*refCased)
		if tokLC {
			w += ": chrF counts every capital as an error (--tok-lc lowercases BLEU only); leave chrF out with --metrics bleu, or translate with a cased model (data.lowercase: false)"
		} else {
			w += ": mixed-case BLEU and chrF count every capital as an error; score BLEU lowercased with --tok-lc, or translate with a cased model (data.lowercase: false)"
		}
		warnings = append(warnings, w)
		break
	}
	if tokLC {
		return warnings // --tok-lc's regex tokens are the same either way, and chrF ignores spaces
	}
	spaced := func(line string) bool { return spacedPunctuation.MatchString(line) }
	punctuated := func(line string) bool { return punctuation.MatchString(line) }
	hypSpaced := share(hyps, spaced, punctuated)
	for k, refs := range refSets {
		refSpaced := share(refs, spaced, punctuated)
		switch {
		case hypSpaced >= styleMost && refSpaced <= styleFew && share(refs, punctuated, nil) >= styleFew:
			warnings = append(warnings, fmt.Sprintf("%s looks tokenized (a space before punctuation on %.0f%% of its lines with punctuation) but %s does not (%.0f%%): 13a BLEU splits the two differently (\"man 's\" against \"man's\") and counts that as errors; detokenize the hypotheses (attend translate writes detokenized text unless --tokenized), or score with --tok-lc, which splits both sides alike",
				hypName, 100*hypSpaced, refNames[k], 100*refSpaced))
		case refSpaced >= styleMost && hypSpaced <= styleFew && share(hyps, punctuated, nil) >= styleFew:
			warnings = append(warnings, fmt.Sprintf("%s looks tokenized (a space before punctuation on %.0f%% of its lines with punctuation) but %s does not (%.0f%%): 13a BLEU splits the two differently and counts that as errors; score against detokenized references, or with --tok-lc, which splits both sides alike",
				refNames[k], 100*refSpaced, hypName, 100*hypSpaced))
		default:
			continue
		}
		break
	}
	return warnings
}

// share is the fraction of the lines that pass among those that count (all when counts is nil); 0 when none
// counts.
func share(lines []string, pass, counts func(string) bool) float64 {
	n, yes := 0, 0
	for _, l := range lines {
		if counts != nil && !counts(l) {
			continue
		}
		n++
		if pass(l) {
			yes++
		}
	}
	if n == 0 {
		return 0
	}
	return float64(yes) / float64(n)
}

func hasUpper(s string) bool  { return strings.IndexFunc(s, unicode.IsUpper) >= 0 }
func hasLetter(s string) bool { return strings.IndexFunc(s, unicode.IsLetter) >= 0 }
