package align

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestSpreadLinksOverSubwords works an example by hand: "das hausboot schwimmt" → "the houseboat floats", split
// into das | haus@@ boot | schwimmt and the | house@@ boat | floats. The word link 1-1 becomes the four links of
// the two pieces of each word, and the gold distribution the loss sees gives each piece of "houseboat" half
// of each piece of "hausboot" (a third each once "das" is linked to "houseboat" too).
func TestSpreadLinksOverSubwords(t *testing.T) {
	srcWordOf := []int{0, 1, 1, 2} // das haus@@ boot schwimmt
	tgtWordOf := []int{0, 1, 1, 2} // the house@@ boat floats
	words := []Link{l(0, 0), l(1, 1), l(2, 2)}
	got := SpreadLinks(words, srcWordOf, tgtWordOf)
	want := []Link{l(0, 0), l(1, 1), l(1, 2), l(2, 1), l(2, 2), l(3, 3)}
	if !slices.Equal(got, want) {
		t.Fatalf("SpreadLinks = %v, want %v", got, want)
	}
	// Five decoder steps: the four pieces and </s>, which has no links.
	const srcLen, tgtLen = 4, 5
	guide := make([]float64, tgtLen*srcLen)
	FillGuide(guide, 1, srcLen, tgtLen, 0, got)
	wantGuide := []float64{
		1, 0, 0, 0, // the
		0, 0.5, 0.5, 0, // house@@
		0, 0.5, 0.5, 0, // boat
		0, 0, 0, 1, // floats
		0, 0, 0, 0, // </s>
	}
	if !slices.Equal(guide, wantGuide) {
		t.Fatalf("gold distributions %v, want %v", guide, wantGuide)
	}
	// Uniform attention: each of the four linked steps costs −log(1/4 + ε), whatever its spread.
	weights := slices.Repeat([]float64{0.25}, tgtLen*srcLen)
	if loss, want := GuideLoss(weights, guide), -4*math.Log(0.25+GuideEpsilon); math.Abs(loss-want) > 1e-12 {
		t.Errorf("GuideLoss = %g, want %g", loss, want)
	}

	// "das" linked to "houseboat" too: each piece of "houseboat" spreads over das, haus@@ and boot.
	got = SpreadLinks(append(words, Link{Src: 0, Tgt: 1, Possible: true}), srcWordOf, tgtWordOf)
	want = []Link{l(0, 0), {Src: 0, Tgt: 1, Possible: true}, {Src: 0, Tgt: 2, Possible: true}, l(1, 1), l(1, 2), l(2, 1), l(2, 2), l(3, 3)}
	if !slices.Equal(got, want) {
		t.Fatalf("SpreadLinks = %v, want %v", got, want)
	}
	FillGuide(guide, 1, srcLen, tgtLen, 0, got)
	third := 1.0 / 3
	wantGuide = []float64{1, 0, 0, 0, third, third, third, 0, third, third, third, 0, 0, 0, 0, 1, 0, 0, 0, 0}
	if !slices.Equal(guide, wantGuide) {
		t.Fatalf("gold distributions %v, want %v", guide, wantGuide)
	}

	// Words that are whole (one piece each) keep their links.
	if got := SpreadLinks(words, []int{0, 1, 2}, []int{0, 1, 2}); !slices.Equal(got, words) {
		t.Errorf("SpreadLinks over whole words = %v, want %v", got, words)
	}
}

// TestSpreadLinksPanicsBeyondTheWords: a link to a word the pieces do not have is a bug upstream (links are
// checked against their words when read), not a link to drop.
func TestSpreadLinksPanicsBeyondTheWords(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "link 3-0 over 4 source and 2 target pieces") {
			t.Errorf("recovered %v", r)
		}
	}()
	SpreadLinks([]Link{l(3, 0)}, []int{0, 1, 1, 2}, []int{0, 0})
}
