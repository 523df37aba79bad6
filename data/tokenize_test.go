package data

import (
	"reflect"
	"testing"
)

// TestTokenizerMatchesPython compares with the tokens Python gives for re.findall(r"\w+|[^\w\s]", s.lower()),
// the PyTorch peer's tokenizer (expected values produced with Python 3.11).
func TestTokenizerMatchesPython(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"A man in an orange hat starring at something.", []string{"a", "man", "in", "an", "orange", "hat", "starring", "at", "something", "."}},
		{"l'homme «Va !» 3,5km ß Straße", []string{"l", "'", "homme", "«", "va", "!", "»", "3", ",", "5km", "ß", "straße"}},
		{"naïve café—«ok»", []string{"naïve", "café", "—", "«", "ok", "»"}},
		{"e\u0301t\u00e9", []string{"e", "\u0301", "té"}}, // a combining mark is not a word character
		{"x\u00a0y\u2009z\u3000w\u200bv", []string{"x", "y", "z", "w", "\u200b", "v"}},
		{"٣٤ ½ x²", []string{"٣٤", "½", "x²"}},
		{"a\x1cb\u0085c\x0bd", []string{"a", "b", "c", "d"}},
		{"Zwei junge, weiße Männer sind im Freien.", []string{"zwei", "junge", ",", "weiße", "männer", "sind", "im", "freien", "."}},
		{"   ", nil},
	}
	tok := NewRegexTokenizer(true)
	for _, c := range cases {
		if got := tok.Tokenize(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTokenizerKeepsCaseWhenAsked(t *testing.T) {
	got := NewRegexTokenizer(false).Tokenize("Va ! Straße")
	if want := []string{"Va", "!", "Straße"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	var zero RegexTokenizer
	if got := zero.Tokenize("ABC"); got[0] != "ABC" {
		t.Fatalf("zero-value tokenizer lowercased: %q", got)
	}
}
