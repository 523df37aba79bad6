package synth

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// parsedPhrase is a noun phrase read back from a source sentence, with source positions.
type parsedPhrase struct {
	detPos, adjPos, nounPos int // adjPos is -1 without adjective
	def                     definiteness
	num                     number
	noun                    noun
	adjective               adjective
}

// parsedSentence is a source sentence read back with the lexicon; advPos is -1 without adverb.
type parsedSentence struct {
	subject, object *parsedPhrase
	verbPos, advPos int
	verb            verb
	adverb          adverb
}

// parseSource parses a generated source sentence with the grammar of the package doc, independently of
// the renderer, so the tests can check the target against the rules.
func parseSource(t *testing.T, src string) parsedSentence {
	t.Helper()
	tokens := strings.Split(src, " ")
	pos := 0
	peek := func() string {
		if pos < len(tokens) {
			return tokens[pos]
		}
		return ""
	}
	phrase := func() *parsedPhrase {
		p := &parsedPhrase{detPos: pos, adjPos: -1}
		switch peek() {
		case "the":
			p.def = definite
		case "a", "an", "some":
			p.def = indefinite
		default:
			return nil
		}
		det := peek()
		pos++
		for _, adj := range adjectives {
			if peek() == adj.src {
				p.adjective, p.adjPos = adj, pos
				pos++
				break
			}
		}
		found := false
		for _, n := range nouns {
			if peek() == n.srcSg || peek() == n.srcPl {
				p.noun, p.nounPos, found = n, pos, true
				if peek() == n.srcPl {
					p.num = plural
				}
				pos++
				break
			}
		}
		if !found {
			t.Fatalf("%q: no noun at %d", src, pos)
		}
		wantDet := map[bool]string{false: "the", true: "the"}
		if p.def == indefinite {
			next := tokens[p.detPos+1]
			wantDet = map[bool]string{false: "a", true: "some"}
			if p.num == singular && strings.ContainsAny(next[:1], "aeiou") {
				wantDet[false] = "an"
			}
		}
		if det != wantDet[p.num == plural] {
			t.Errorf("%q: determiner %q at %d does not fit its noun phrase", src, det, p.detPos)
		}
		return p
	}
	var s parsedSentence
	s.advPos = -1
	if s.subject = phrase(); s.subject == nil {
		t.Fatalf("%q: no subject", src)
	}
	s.verbPos = pos
	found := false
	for _, v := range verbs {
		if peek() == v.src {
			s.verb, found = v, true
			break
		}
	}
	if !found {
		t.Fatalf("%q: no verb at %d", src, pos)
	}
	pos++
	s.object = phrase()
	if (s.object != nil) != s.verb.transitive {
		t.Errorf("%q: verb %q transitive=%v but object present=%v", src, s.verb.src, s.verb.transitive, s.object != nil)
	}
	for _, adv := range adverbs {
		if peek() == adv.src {
			s.adverb, s.advPos = adv, pos
			pos++
			break
		}
	}
	if pos != len(tokens) {
		t.Fatalf("%q: unparsed tokens from %d", src, pos)
	}
	return s
}

// targetPositions checks that alignment is a valid one-to-one alignment of srcLen and tgtLen tokens and
// returns the target position of each source position.
func targetPositions(t *testing.T, pair Pair) []int {
	t.Helper()
	srcLen, tgtLen := len(strings.Fields(pair.Src)), len(strings.Fields(pair.Tgt))
	if srcLen != tgtLen {
		t.Fatalf("%q -> %q: %d source tokens, %d target tokens", pair.Src, pair.Tgt, srcLen, tgtLen)
	}
	tgtOf := make([]int, srcLen)
	for i := range tgtOf {
		tgtOf[i] = -1
	}
	tgtSeen := make([]bool, tgtLen)
	for _, link := range pair.Alignment {
		s, tg := link[0], link[1]
		if s < 0 || s >= srcLen || tg < 0 || tg >= tgtLen {
			t.Fatalf("%q: link %d-%d out of range", pair.Src, s, tg)
		}
		if tgtSeen[tg] {
			t.Fatalf("%q: target %d aligned twice", pair.Src, tg)
		}
		if tgtOf[s] >= 0 {
			t.Fatalf("%q: source %d aligned twice", pair.Src, s)
		}
		tgtSeen[tg], tgtOf[s] = true, tg
	}
	for tg, seen := range tgtSeen {
		if !seen {
			t.Fatalf("%q: target %d unaligned", pair.Src, tg)
		}
	}
	return tgtOf
}

// Expected agreement forms, written out rather than computed so that they check the lexicon functions.
var (
	wantDeterminer = map[[3]int]string{ // definiteness, number, gender
		{0, 0, 0}: "der", {0, 0, 1}: "die", {0, 0, 2}: "das",
		{1, 0, 0}: "ein", {1, 0, 1}: "eine", {1, 0, 2}: "eines",
		{0, 1, 0}: "dei", {0, 1, 1}: "dei", {0, 1, 2}: "dei",
		{1, 1, 0}: "einige", {1, 1, 1}: "einige", {1, 1, 2}: "einige",
	}
	wantAdjectiveEnding = map[[2]int]string{ // number, gender
		{0, 0}: "er", {0, 1}: "e", {0, 2}: "es", {1, 0}: "en", {1, 1}: "en", {1, 2}: "en",
	}
)

// checkPhrase checks the target of one noun phrase: determiner, noun, adjective in that order, agreeing.
func checkPhrase(t *testing.T, pair Pair, tgt []string, tgtOf []int, p *parsedPhrase) {
	t.Helper()
	detAt := tgtOf[p.detPos]
	if tgtOf[p.nounPos] != detAt+1 {
		t.Errorf("%q -> %q: noun at %d does not follow its determiner at %d", pair.Src, pair.Tgt, tgtOf[p.nounPos], detAt)
	}
	if want := wantDeterminer[[3]int{int(p.def), int(p.num), int(p.noun.gender)}]; tgt[detAt] != want {
		t.Errorf("%q -> %q: determiner %q, want %q", pair.Src, pair.Tgt, tgt[detAt], want)
	}
	wantNoun := map[number]string{singular: p.noun.tgtSg, plural: p.noun.tgtPl}[p.num]
	if got := tgt[tgtOf[p.nounPos]]; got != wantNoun {
		t.Errorf("%q -> %q: noun %q, want %q", pair.Src, pair.Tgt, got, wantNoun)
	}
	if p.adjPos < 0 {
		return
	}
	if tgtOf[p.adjPos] != tgtOf[p.nounPos]+1 {
		t.Errorf("%q -> %q: adjective at %d does not follow its noun at %d", pair.Src, pair.Tgt, tgtOf[p.adjPos], tgtOf[p.nounPos])
	}
	wantAdj := p.adjective.tgtStem + wantAdjectiveEnding[[2]int{int(p.num), int(p.noun.gender)}]
	if got := tgt[tgtOf[p.adjPos]]; got != wantAdj {
		t.Errorf("%q -> %q: adjective %q, want %q", pair.Src, pair.Tgt, got, wantAdj)
	}
}

func TestGeneratedPairsFollowTheTargetRules(t *testing.T) {
	pairs := Generate(3000, rand.New(rand.NewPCG(3, 4)))
	for _, pair := range pairs {
		s := parseSource(t, pair.Src)
		tgtOf := targetPositions(t, pair)
		tgt := strings.Fields(pair.Tgt)
		last := len(tgt) - 1

		// Verb last, agreeing in number with the subject.
		if tgtOf[s.verbPos] != last {
			t.Errorf("%q -> %q: verb at target %d, want last (%d)", pair.Src, pair.Tgt, tgtOf[s.verbPos], last)
		}
		wantVerb := s.verb.tgtStem + map[number]string{singular: "et", plural: "un"}[s.subject.num]
		if tgt[last] != wantVerb {
			t.Errorf("%q -> %q: verb %q, want %q", pair.Src, pair.Tgt, tgt[last], wantVerb)
		}
		// Adverb right before the verb.
		if s.advPos >= 0 && (tgtOf[s.advPos] != last-1 || tgt[last-1] != s.adverb.tgt) {
			t.Errorf("%q -> %q: adverb %q not right before the verb", pair.Src, pair.Tgt, s.adverb.tgt)
		}
		// Subject phrase first, then the object phrase.
		if tgtOf[s.subject.detPos] != 0 {
			t.Errorf("%q -> %q: subject does not come first", pair.Src, pair.Tgt)
		}
		checkPhrase(t, pair, tgt, tgtOf, s.subject)
		if s.object != nil {
			subjectLen := 2
			if s.subject.adjPos >= 0 {
				subjectLen = 3
			}
			if tgtOf[s.object.detPos] != subjectLen {
				t.Errorf("%q -> %q: object does not follow the subject", pair.Src, pair.Tgt)
			}
			checkPhrase(t, pair, tgt, tgtOf, s.object)
		}
	}
}

func TestRenderGivesKnownTranslations(t *testing.T) {
	tests := []struct {
		s             sentence
		src, tgt, aln string
	}{
		{
			s: sentence{
				subject: nounPhrase{definite, singular, 0, 0}, // the big dog
				verb:    0,                                    // saw
				object:  &nounPhrase{indefinite, singular, 1, 1},
				adverb:  0, // quickly
			},
			src: "the big dog saw a small cat quickly",
			tgt: "der hund groter eine katze klene schnel sehet",
			aln: "0-0 1-2 2-1 3-7 4-3 5-5 6-4 7-6",
		},
		{
			s:   sentence{subject: nounPhrase{definite, plural, 0, -1}, verb: 8, adverb: -1}, // the dogs slept
			src: "the dogs slept",
			tgt: "dei hunde schlafun",
			aln: "0-0 1-1 2-2",
		},
		{
			s: sentence{
				subject: nounPhrase{indefinite, singular, 6, 2}, // an old child
				verb:    7,                                      // helped
				object:  &nounPhrase{indefinite, plural, 3, -1}, // some mice
				adverb:  -1,
			},
			src: "an old child helped some mice",
			tgt: "eines kind altes einige muse helpet",
			aln: "0-0 1-2 2-1 3-5 4-3 5-4",
		},
	}
	for _, tt := range tests {
		got := tt.s.render()
		if got.Src != tt.src || got.Tgt != tt.tgt || pharaoh(got.Alignment) != tt.aln {
			t.Errorf("render = %q / %q / %q, want %q / %q / %q",
				got.Src, got.Tgt, pharaoh(got.Alignment), tt.src, tt.tgt, tt.aln)
		}
	}
}

// crosses reports whether the alignment has two links whose order differs between source and target.
func crosses(alignment [][2]int) bool {
	for _, a := range alignment {
		for _, b := range alignment {
			if a[0] < b[0] && a[1] > b[1] {
				return true
			}
		}
	}
	return false
}

func TestAlignmentIsNonMonotonicWithAdjectiveOrObject(t *testing.T) {
	pairs := Generate(2000, rand.New(rand.NewPCG(5, 6)))
	var withReordering, without int
	for _, pair := range pairs {
		s := parseSource(t, pair.Src)
		reorders := s.object != nil || s.subject.adjPos >= 0 || s.advPos >= 0
		if crosses(pair.Alignment) != reorders {
			t.Errorf("%q -> %q: alignment %s crosses=%v, want %v",
				pair.Src, pair.Tgt, pharaoh(pair.Alignment), !reorders, reorders)
		}
		if reorders {
			withReordering++
		} else {
			without++
		}
	}
	// Most sentences must show reordering, or the demo would not show non-monotonic attention.
	if withReordering < len(pairs)*3/4 || without == 0 {
		t.Errorf("%d sentences with reordering, %d without, of %d", withReordering, without, len(pairs))
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a := Generate(200, rand.New(rand.NewPCG(1, 2)))
	b := Generate(200, rand.New(rand.NewPCG(1, 2)))
	if !reflect.DeepEqual(a, b) {
		t.Error("same rng state gave different pairs")
	}
	c := Generate(200, rand.New(rand.NewPCG(1, 3)))
	if reflect.DeepEqual(a, c) {
		t.Error("different rng state gave the same pairs")
	}
	if got := Generate(0, rand.New(rand.NewPCG(1, 2))); len(got) != 0 {
		t.Errorf("Generate(0) returned %d pairs", len(got))
	}
}

func TestSplitIsDeterministicPerSeed(t *testing.T) {
	train1, valid1, test1 := Split(300, 50, 50, 42)
	train2, valid2, test2 := Split(300, 50, 50, 42)
	if !reflect.DeepEqual(train1, train2) || !reflect.DeepEqual(valid1, valid2) || !reflect.DeepEqual(test1, test2) {
		t.Error("same seed gave different splits")
	}
	train3, _, test3 := Split(300, 50, 50, 43)
	if reflect.DeepEqual(train1, train3) || reflect.DeepEqual(test1, test3) {
		t.Error("different seeds gave the same split")
	}
}

func TestSplitKeepsHeldOutSentencesOutOfTrain(t *testing.T) {
	train, valid, test := Split(5000, 500, 500, 7)
	if len(train) != 5000 || len(valid) != 500 || len(test) != 500 {
		t.Fatalf("sizes %d, %d, %d, want 5000, 500, 500", len(train), len(valid), len(test))
	}
	inTrain := make(map[string]bool)
	for _, pair := range train {
		if inTrain[pair.Src] {
			t.Errorf("train repeats %q", pair.Src)
		}
		inTrain[pair.Src] = true
	}
	for name, set := range map[string][]Pair{"valid": valid, "test": test} {
		for _, pair := range set {
			if inTrain[pair.Src] {
				t.Errorf("%s sentence %q is also in train", name, pair.Src)
			}
		}
	}
}

func TestGeneratedSentencesCoverTheLexiconWithinLengthBounds(t *testing.T) {
	pairs := Generate(5000, rand.New(rand.NewPCG(9, 9)))
	srcWords := make(map[string]bool)
	tgtWords := make(map[string]bool)
	for _, pair := range pairs {
		tokens := strings.Fields(pair.Src)
		if len(tokens) < 3 || len(tokens) > 8 {
			t.Errorf("%q has %d tokens, want 3 to 8", pair.Src, len(tokens))
		}
		for _, w := range tokens {
			srcWords[w] = true
		}
		for _, w := range strings.Fields(pair.Tgt) {
			tgtWords[w] = true
		}
	}
	for _, n := range nouns {
		for _, w := range []string{n.srcSg, n.srcPl} {
			if !srcWords[w] {
				t.Errorf("source noun %q never generated", w)
			}
		}
		for _, w := range []string{n.tgtSg, n.tgtPl} {
			if !tgtWords[w] {
				t.Errorf("target noun %q never generated", w)
			}
		}
	}
	for _, v := range verbs {
		for _, w := range []string{v.tgtStem + "et", v.tgtStem + "un"} {
			if !tgtWords[w] {
				t.Errorf("target verb %q never generated", w)
			}
		}
	}
	for _, a := range adjectives {
		if !srcWords[a.src] {
			t.Errorf("adjective %q never generated", a.src)
		}
	}
	for _, a := range adverbs {
		if !srcWords[a.src] {
			t.Errorf("adverb %q never generated", a.src)
		}
	}
	// Source 4 determiners + 40 nouns + 11 verbs + 8 adjectives + 4 adverbs; target 8 determiners +
	// 40 nouns + 22 verb forms + 8*4 adjective forms + 4 adverbs.
	if len(srcWords) != 67 || len(tgtWords) != 106 {
		t.Errorf("%d source and %d target word types, want 67 and 106", len(srcWords), len(tgtWords))
	}
}

func TestLexiconFormsAreDistinctLowercaseWords(t *testing.T) {
	word := regexp.MustCompile(`^[a-z]+$`)
	check := func(side string, owner map[string]string, form, lexeme string) {
		if !word.MatchString(form) {
			t.Errorf("%s form %q of %s is not a lowercase ASCII word", side, form, lexeme)
		}
		if other, ok := owner[form]; ok && other != lexeme {
			t.Errorf("%s form %q belongs to both %s and %s", side, form, other, lexeme)
		}
		owner[form] = lexeme
	}
	src, tgt := make(map[string]string), make(map[string]string)
	for _, w := range []string{"the", "a", "an", "some"} {
		check("source", src, w, "determiner")
	}
	for _, w := range wantDeterminer {
		check("target", tgt, w, "determiner "+w)
	}
	for _, n := range nouns {
		check("source", src, n.srcSg, "noun "+n.srcSg+" sg")
		check("source", src, n.srcPl, "noun "+n.srcSg+" pl")
		check("target", tgt, n.tgtSg, "noun "+n.srcSg+" sg")
		check("target", tgt, n.tgtPl, "noun "+n.srcSg+" pl")
	}
	for _, v := range verbs {
		check("source", src, v.src, "verb "+v.src)
		check("target", tgt, v.tgtStem+"et", "verb "+v.src+" sg")
		check("target", tgt, v.tgtStem+"un", "verb "+v.src+" pl")
	}
	for _, a := range adjectives {
		check("source", src, a.src, "adjective "+a.src)
		for _, ending := range wantAdjectiveEnding {
			check("target", tgt, a.tgtStem+ending, fmt.Sprintf("adjective %s -%s", a.src, ending))
		}
	}
	for _, a := range adverbs {
		check("source", src, a.src, "adverb "+a.src)
		check("target", tgt, a.tgt, "adverb "+a.src)
	}
}

// readLines reads a file written by WriteFiles into lines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(content)
	if text == "" {
		return nil
	}
	if !strings.HasSuffix(text, "\n") {
		t.Errorf("%s does not end with a newline", path)
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// parsePharaoh parses "s-t s-t ..." back into links.
func parsePharaoh(t *testing.T, line string) [][2]int {
	t.Helper()
	var links [][2]int
	for _, field := range strings.Fields(line) {
		s, tg, ok := strings.Cut(field, "-")
		si, err1 := strconv.Atoi(s)
		ti, err2 := strconv.Atoi(tg)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("bad link %q in %q", field, line)
		}
		links = append(links, [2]int{si, ti})
	}
	return links
}

func TestWriteFilesRoundTrips(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo", "corpus") // WriteFiles must create missing parents
	train, valid, test := Split(40, 7, 5, 11)
	if err := WriteFiles(dir, train, valid, test); err != nil {
		t.Fatal(err)
	}
	for name, pairs := range map[string][]Pair{"train": train, "valid": valid, "test": test} {
		srcLines := readLines(t, filepath.Join(dir, name+".src"))
		tgtLines := readLines(t, filepath.Join(dir, name+".tgt"))
		alignLines := readLines(t, filepath.Join(dir, name+".align"))
		if len(srcLines) != len(pairs) || len(tgtLines) != len(pairs) || len(alignLines) != len(pairs) {
			t.Fatalf("%s: %d/%d/%d lines, want %d", name, len(srcLines), len(tgtLines), len(alignLines), len(pairs))
		}
		for i, pair := range pairs {
			got := Pair{Src: srcLines[i], Tgt: tgtLines[i], Alignment: parsePharaoh(t, alignLines[i])}
			if !reflect.DeepEqual(got, pair) {
				t.Errorf("%s line %d: read back %+v, want %+v", name, i+1, got, pair)
			}
		}
	}
}

func TestWriteFilesReportsUnwritableDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFiles(filepath.Join(file, "corpus"), nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("WriteFiles under a regular file: err = %v, want an error naming %s", err, file)
	}
}
