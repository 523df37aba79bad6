package data

import (
	"reflect"
	"testing"
)

func TestVocabKeepsSpecialsFirstThenFrequencyThenBytes(t *testing.T) {
	sents := [][]string{{"b", "a", "c"}, {"a", "c", "d"}, {"a", "e"}}
	v := BuildVocab(sents, 1, 0)
	want := []string{"<pad>", "<unk>", "<s>", "</s>", "a", "c", "b", "d", "e"}
	if !reflect.DeepEqual(v.Tokens(), want) {
		t.Fatalf("tokens %q, want %q", v.Tokens(), want)
	}
	if got := BuildVocab(sents, 2, 0).Tokens(); !reflect.DeepEqual(got, want[:6]) {
		t.Fatalf("minFreq 2: %q", got)
	}
	if got := BuildVocab(sents, 1, 5).Tokens(); !reflect.DeepEqual(got, want[:5]) {
		t.Fatalf("maxSize 5: %q", got)
	}
	if v.ID("zzz") != UnkID || v.ID("a") != 4 || v.Token(5) != "c" {
		t.Fatal("ID/Token lookups wrong")
	}
	if got := v.Encode([]string{"a", "zzz"}); !reflect.DeepEqual(got, []int{4, UnkID}) {
		t.Fatalf("Encode: %v", got)
	}
}

func TestVocabDecodeStopsAtEOS(t *testing.T) {
	v := BuildVocab([][]string{{"x", "y"}}, 1, 0)
	if got := v.Decode([]int{BOSID, 4, PadID, 5, EOSID, 4}); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Fatalf("Decode: %q", got)
	}
}

func TestNewVocabRoundTripAndErrors(t *testing.T) {
	v := BuildVocab([][]string{{"x", "y", "x"}}, 1, 0)
	again, err := NewVocab(v.Tokens())
	if err != nil || !reflect.DeepEqual(again.Tokens(), v.Tokens()) {
		t.Fatalf("round trip: %v", err)
	}
	for _, bad := range [][]string{{"<pad>", "<unk>"}, {"<unk>", "<pad>", "<s>", "</s>"}, {"<pad>", "<unk>", "<s>", "</s>", "x", "x"}} {
		if _, err := NewVocab(bad); err == nil {
			t.Errorf("NewVocab(%q) accepted", bad)
		}
	}
}
