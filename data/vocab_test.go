package data

import (
	"reflect"
	"strings"
	"testing"
)

func TestBuildVocabKeepsSpecialsFirstThenFrequencyThenBytes(t *testing.T) {
	// counts: a 4, ä 2, b 2, Z 2, c 1, z 1; ties in byte order: "Z" < "b" < "ä" (0xC3 0xA4).
	sents := [][]string{{"a", "b", "ä", "Z"}, {"a", "c", "b"}, {"a", "ä", "Z"}, {"z", "a"}}
	got := BuildVocab(sents, 1, 0).Tokens()
	want := []string{"<pad>", "<unk>", "<s>", "</s>", "a", "Z", "b", "ä", "c", "z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tokens %q, want %q", got, want)
	}
}

func TestBuildVocabMinFreqAndMaxSize(t *testing.T) {
	sents := [][]string{{"a", "b", "c"}, {"a", "c", "d"}, {"a", "e", "c"}, {"a"}}
	// counts: a 4, c 3, b 1, d 1, e 1
	specials := []string{"<pad>", "<unk>", "<s>", "</s>"}
	all := append(append([]string(nil), specials...), "a", "c", "b", "d", "e")
	cases := []struct {
		name             string
		minFreq, maxSize int
		want             []string
	}{
		{"minFreq 0 keeps all", 0, 0, all},
		{"minFreq 1 keeps all", 1, 0, all},
		{"minFreq 2", 2, 0, all[:6]},
		{"minFreq 4", 4, 0, all[:5]},
		{"minFreq above every count", 5, 0, specials},
		{"maxSize counts the specials", 1, 6, all[:6]},
		{"maxSize larger than the vocabulary", 1, 100, all},
		{"maxSize exactly the specials", 1, 4, specials},
		{"maxSize below the specials keeps them", 1, 2, specials},
		{"minFreq and maxSize together", 2, 5, all[:5]},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := BuildVocab(sents, c.minFreq, c.maxSize)
			if got := v.Tokens(); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("tokens %q, want %q", got, c.want)
			}
			if v.Size() != len(c.want) {
				t.Fatalf("Size() = %d, want %d", v.Size(), len(c.want))
			}
		})
	}
}

func TestBuildVocabDoesNotRepeatSpecialsFoundInText(t *testing.T) {
	v := BuildVocab([][]string{{"<unk>", "x", "</s>", "<unk>"}}, 1, 0)
	if want := []string{"<pad>", "<unk>", "<s>", "</s>", "x"}; !reflect.DeepEqual(v.Tokens(), want) {
		t.Fatalf("tokens %q, want %q", v.Tokens(), want)
	}
}

func TestVocabLookups(t *testing.T) {
	v := BuildVocab([][]string{{"hund", "katze", "hund"}}, 1, 0)
	ids := map[string]int{PadToken: PadID, UnkToken: UnkID, BOSToken: BOSID, EOSToken: EOSID, "hund": 4, "katze": 5, "maus": UnkID}
	for tok, id := range ids {
		if got := v.ID(tok); got != id {
			t.Errorf("ID(%q) = %d, want %d", tok, got, id)
		}
	}
	for id, tok := range []string{"<pad>", "<unk>", "<s>", "</s>", "hund", "katze"} {
		if got := v.Token(id); got != tok {
			t.Errorf("Token(%d) = %q, want %q", id, got, tok)
		}
	}
	if got := v.Encode([]string{"katze", "maus", "hund"}); !reflect.DeepEqual(got, []int{5, UnkID, 4}) {
		t.Errorf("Encode = %v", got)
	}
	tokens := v.Tokens()
	tokens[4] = "changed"
	if v.Token(4) != "hund" {
		t.Error("Tokens returned the vocabulary's own slice")
	}
}

func TestVocabTokenPanicsOutOfRange(t *testing.T) {
	v := BuildVocab([][]string{{"x"}}, 1, 0)
	for _, id := range []int{-1, v.Size()} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, "out of range") {
					t.Errorf("Token(%d): panic %q, want an out-of-range panic", id, msg)
				}
			}()
			v.Token(id)
		}()
	}
}

func TestVocabDecodeStopsAtEOSAndSkipsPadAndBOS(t *testing.T) {
	v := BuildVocab([][]string{{"x", "y", "x"}}, 1, 0) // x=4, y=5
	cases := []struct {
		ids  []int
		want []string
	}{
		{[]int{BOSID, 4, PadID, 5, EOSID, 4, 5}, []string{"x", "y"}},
		{[]int{4, 5, 4}, []string{"x", "y", "x"}},
		{[]int{4, UnkID, 5, EOSID}, []string{"x", "<unk>", "y"}},
		{[]int{EOSID, 4}, nil},
		{[]int{PadID, BOSID}, nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got := v.Decode(c.ids); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.want)
		}
	}
}

func TestNewVocabRoundTrip(t *testing.T) {
	v := BuildVocab([][]string{{"x", "y", "x", "ß"}}, 1, 0)
	tokens := v.Tokens()
	again, err := NewVocab(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Tokens(), v.Tokens()) || again.ID("ß") != v.ID("ß") || again.ID("ß") == UnkID {
		t.Fatalf("round trip gave %q, want %q", again.Tokens(), v.Tokens())
	}
	tokens[4] = "changed"
	if again.Token(4) != v.Token(4) {
		t.Fatal("NewVocab kept the caller's slice")
	}
}

func TestNewVocabRejectsBadTokenLists(t *testing.T) {
	cases := []struct {
		tokens []string
		want   string
	}{
		{nil, "data: vocabulary of 0 tokens lacks the specials"},
		{[]string{"<pad>", "<unk>"}, "data: vocabulary of 2 tokens lacks the specials"},
		{[]string{"<unk>", "<pad>", "<s>", "</s>"}, `data: vocabulary token 0 is "<unk>", want "<pad>"`},
		{[]string{"<pad>", "<unk>", "</s>", "<s>", "x"}, `data: vocabulary token 2 is "</s>", want "<s>"`},
		{[]string{"<pad>", "<unk>", "<s>", "</s>", "x", "y", "x"}, `data: vocabulary token "x" appears twice (ids 4 and 6)`},
		{[]string{"<pad>", "<unk>", "<s>", "</s>", "<unk>"}, `data: vocabulary token "<unk>" appears twice (ids 1 and 4)`},
	}
	for _, c := range cases {
		_, err := NewVocab(c.tokens)
		if err == nil || err.Error() != c.want {
			t.Errorf("NewVocab(%q): error %v, want %q", c.tokens, err, c.want)
		}
	}
}

func TestEncodeExamplesUsesEachSidesVocabAndKeepsNilTargets(t *testing.T) {
	src := BuildVocab([][]string{{"hund"}}, 1, 0)              // hund=4
	tgt := BuildVocab([][]string{{"cat", "dog", "dog"}}, 1, 0) // dog=4, cat=5
	pairs := []Pair{
		{Src: []string{"hund", "katze"}, Tgt: []string{"cat", "dog", "cow"}},
		{Src: []string{"hund"}},
	}
	want := []Example{{Src: []int{4, UnkID}, Tgt: []int{5, 4, UnkID}}, {Src: []int{4}, Tgt: nil}}
	if got := EncodeExamples(pairs, src, tgt); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
