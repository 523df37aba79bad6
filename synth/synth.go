// Package synth generates attend's built-in demo corpus: a toy language pair with word reordering and
// agreement, whose correct word alignment is known.
//
// The source language is English-like. Every sentence follows
//
//	DET ADJ? NOUN VERB [DET ADJ? NOUN] ADV?
//
// a subject noun phrase, a verb in the past tense, an object noun phrase when the verb is transitive, and
// an optional adverb, e.g. "the big dog saw a small cat quickly" or "the dogs slept". Determiners are "the"
// (either number), "a" or "an" (singular) and "some" (plural); nouns are singular or plural ("dog"/"dogs",
// "mouse"/"mice"). Sentences are 3 to 8 tokens long.
//
// The target language is German-like but invented. Its rules are:
//
//   - Verb-final order: subject phrase, object phrase, adverb, verb (SOV).
//   - Adjectives follow their noun ("the big dog" becomes "der hund groter").
//   - Every noun has a gender (masculine, feminine or neuter) and an invented, irregular plural.
//   - Determiners agree with their noun in number and, in the singular, gender: definite der/die/das,
//     plural dei; indefinite ein/eine/eines, plural einige.
//   - Adjectives take the ending -er/-e/-es (masculine/feminine/neuter singular) or -en (plural).
//   - The verb takes -et after a singular subject and -un after a plural one. The English past tense does
//     not show number, so the translation of the verb needs a look at the subject noun.
//
// Each target token translates exactly one source token, so the gold alignment is a permutation: the
// verb moves behind the object and the adverb, and each adjective swaps with its noun. Agreement makes
// some target words depend on a second source word (a determiner on its noun, a verb on its subject),
// which an attention model must learn to look at.
//
// The vocabulary is 20 nouns, 11 verbs (8 transitive), 8 adjectives and 4 adverbs. All words are
// lowercase ASCII separated by single spaces, without punctuation, so any tokenizer splits them on spaces.
// A noun phrase is plural with probability 1/2, definite with probability 1/2 and has an adjective with
// probability 2/5; a sentence has an adverb with probability 3/10; verbs are drawn uniformly.
package synth

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Pair is one generated sentence pair with its gold alignment.
type Pair struct {
	Src, Tgt string // space-separated tokens
	// Alignment holds (source index, target index) pairs of 0-based token positions, ordered by source
	// index; every target token is aligned to exactly one source token and every source token to one
	// target token.
	Alignment [][2]int
}

// Probabilities of the optional parts of a sentence, see the package doc.
const (
	pluralProb    = 0.5
	definiteProb  = 0.5
	adjectiveProb = 0.4
	adverbProb    = 0.3
)

// maxRedraws is how many duplicates in a row Generate draws before it accepts a duplicate; the sentence
// space (tens of millions) is so much larger than any corpus that the limit is reached only by accident.
const maxRedraws = 1000

// splitStream is the second PCG seed word used by Split, fixed so that a seed alone names a corpus.
const splitStream = 0x61747465_6e640001

// Generate returns n pairs drawn with rng; a pair whose source was already drawn is redrawn (up to a
// limit), so the pairs are distinct as far as possible. The same rng state gives the same pairs.
// Generate returns nil for n <= 0.
func Generate(n int, rng *rand.Rand) []Pair {
	if n <= 0 {
		return nil
	}
	pairs := make([]Pair, 0, n)
	seen := make(map[string]bool, n)
	for len(pairs) < n {
		pair := randomSentence(rng).render()
		for redraw := 0; seen[pair.Src] && redraw < maxRedraws; redraw++ {
			pair = randomSentence(rng).render()
		}
		seen[pair.Src] = true
		pairs = append(pairs, pair)
	}
	return pairs
}

// Split generates train, valid and test sets of the given sizes from seed. The three sets are drawn as
// one distinct corpus, so no source sentence of valid or test appears in train; should the generator ever
// run out of distinct sentences, the clashing valid and test pairs are dropped, and those sets come back
// shorter. Split panics if a size is negative.
func Split(nTrain, nValid, nTest int, seed uint64) (train, valid, test []Pair) {
	if nTrain < 0 || nValid < 0 || nTest < 0 {
		panic(fmt.Sprintf("synth: Split sizes %d, %d, %d: negative size", nTrain, nValid, nTest))
	}
	rng := rand.New(rand.NewPCG(seed, splitStream))
	all := Generate(nTrain+nValid+nTest, rng)
	train = all[:nTrain:nTrain]
	inTrain := make(map[string]bool, nTrain)
	for _, pair := range train {
		inTrain[pair.Src] = true
	}
	notInTrain := func(pairs []Pair) []Pair {
		kept := make([]Pair, 0, len(pairs))
		for _, pair := range pairs {
			if !inTrain[pair.Src] {
				kept = append(kept, pair)
			}
		}
		return kept
	}
	valid = notInTrain(all[nTrain : nTrain+nValid])
	test = notInTrain(all[nTrain+nValid:])
	return train, valid, test
}

// WriteFiles creates dir if needed and writes dir/{train,valid,test}.{src,tgt,align}, one pair per line;
// the .align files are in Pharaoh format ("s-t s-t ...", 0-based source and target positions).
func WriteFiles(dir string, train, valid, test []Pair) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	sets := []struct {
		name  string
		pairs []Pair
	}{{"train", train}, {"valid", valid}, {"test", test}}
	for _, set := range sets {
		fields := []struct {
			ext  string
			line func(Pair) string
		}{
			{"src", func(p Pair) string { return p.Src }},
			{"tgt", func(p Pair) string { return p.Tgt }},
			{"align", func(p Pair) string { return pharaoh(p.Alignment) }},
		}
		for _, field := range fields {
			path := filepath.Join(dir, set.name+"."+field.ext)
			if err := writeLines(path, set.pairs, field.line); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeLines writes line(pair) for every pair to path, one per line.
func writeLines(path string, pairs []Pair, line func(Pair) string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synth: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, pair := range pairs {
		w.WriteString(line(pair))
		w.WriteByte('\n')
	}
	err = w.Flush()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("synth: write %s: %w", path, err)
	}
	return nil
}

// pharaoh formats links as "s-t s-t ...".
func pharaoh(links [][2]int) string {
	var b strings.Builder
	for i, link := range links {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(link[0]))
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(link[1]))
	}
	return b.String()
}

// nounPhrase is one drawn noun phrase; adjective is -1 when it has none.
type nounPhrase struct {
	def       definiteness
	num       number
	noun      int
	adjective int
}

// sentence is one drawn sentence; object is nil for an intransitive verb and adverb is -1 when absent.
type sentence struct {
	subject nounPhrase
	verb    int
	object  *nounPhrase
	adverb  int
}

// randomSentence draws a sentence with the probabilities in the package doc.
func randomSentence(rng *rand.Rand) sentence {
	s := sentence{subject: randomNounPhrase(rng), verb: rng.IntN(len(verbs)), adverb: -1}
	if verbs[s.verb].transitive {
		object := randomNounPhrase(rng)
		s.object = &object
	}
	if rng.Float64() < adverbProb {
		s.adverb = rng.IntN(len(adverbs))
	}
	return s
}

// randomNounPhrase draws a noun phrase with the probabilities in the package doc.
func randomNounPhrase(rng *rand.Rand) nounPhrase {
	np := nounPhrase{def: indefinite, num: singular, noun: rng.IntN(len(nouns)), adjective: -1}
	if rng.Float64() < definiteProb {
		np.def = definite
	}
	if rng.Float64() < pluralProb {
		np.num = plural
	}
	if rng.Float64() < adjectiveProb {
		np.adjective = rng.IntN(len(adjectives))
	}
	return np
}

// renderer collects the tokens of a pair: each source token is appended together with its target
// translation, and the target order is given by the target slot the token is put in.
type renderer struct {
	src []string
	// slots holds the target words in target order; each is tagged with its source position.
	slots []slotWord
}

// slotWord is one target word and the source position it translates.
type slotWord struct {
	word   string
	srcPos int
}

// render turns s into its source sentence, target sentence and alignment.
func (s sentence) render() Pair {
	var r renderer
	// Target order: subject phrase, object phrase, adverb, verb. The source order is subject, verb,
	// object, adverb, so the verb and adverb source tokens are created first and placed last.
	subject := r.nounPhrase(s.subject)
	verbPos := r.source(verbs[s.verb].src)
	var object []slotWord
	if s.object != nil {
		object = r.nounPhrase(*s.object)
	}
	r.slots = append(r.slots, subject...)
	r.slots = append(r.slots, object...)
	if s.adverb >= 0 {
		advPos := r.source(adverbs[s.adverb].src)
		r.slots = append(r.slots, slotWord{adverbs[s.adverb].tgt, advPos})
	}
	verbForm := verbs[s.verb].tgtStem + verbSuffix(s.subject.num)
	r.slots = append(r.slots, slotWord{verbForm, verbPos})
	return r.pair()
}

// source appends a source token and returns its position.
func (r *renderer) source(word string) int {
	r.src = append(r.src, word)
	return len(r.src) - 1
}

// nounPhrase appends the source tokens of np and returns its target words in target order:
// determiner, noun, adjective.
func (r *renderer) nounPhrase(np nounPhrase) []slotWord {
	n := nouns[np.noun]
	srcNoun, tgtNoun := n.srcSg, n.tgtSg
	if np.num == plural {
		srcNoun, tgtNoun = n.srcPl, n.tgtPl
	}
	afterDet := srcNoun
	if np.adjective >= 0 {
		afterDet = adjectives[np.adjective].src
	}
	detPos := r.source(srcDeterminer(np.def, np.num, afterDet))
	words := []slotWord{{tgtDeterminer(np.def, np.num, n.gender), detPos}}
	adjPos := -1
	if np.adjective >= 0 {
		adjPos = r.source(adjectives[np.adjective].src)
	}
	words = append(words, slotWord{tgtNoun, r.source(srcNoun)})
	if adjPos >= 0 {
		adj := adjectives[np.adjective].tgtStem + adjectiveSuffix(np.num, n.gender)
		words = append(words, slotWord{adj, adjPos})
	}
	return words
}

// pair joins the collected tokens and lists the alignment in source order.
func (r *renderer) pair() Pair {
	tgt := make([]string, len(r.slots))
	alignment := make([][2]int, len(r.slots))
	for tgtPos, slot := range r.slots {
		tgt[tgtPos] = slot.word
		alignment[slot.srcPos] = [2]int{slot.srcPos, tgtPos}
	}
	return Pair{Src: strings.Join(r.src, " "), Tgt: strings.Join(tgt, " "), Alignment: alignment}
}
