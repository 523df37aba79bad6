package data

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// TestTokenizerMatchesPython compares with Python 3.11's re.findall(r"\w+|[^\w\s]", s.lower()) (the PyTorch
// reference's tokenizer) and, for the case-keeping tokenizer, re.findall(r"\w+|[^\w\s]", s). The expected values
// were produced by running exactly that in python3.
func TestTokenizerMatchesPython(t *testing.T) {
	cases := []struct {
		name, in    string
		lower, keep []string
	}{
		{"english", "A man in an orange hat starring at something.",
			[]string{"a", "man", "in", "an", "orange", "hat", "starring", "at", "something", "."},
			[]string{"A", "man", "in", "an", "orange", "hat", "starring", "at", "something", "."}},
		{"english contractions", "Don't stop: it's 5 o'clock, isn't it?",
			[]string{"don", "'", "t", "stop", ":", "it", "'", "s", "5", "o", "'", "clock", ",", "isn", "'", "t", "it", "?"},
			[]string{"Don", "'", "t", "stop", ":", "it", "'", "s", "5", "o", "'", "clock", ",", "isn", "'", "t", "it", "?"}},
		{"english dashes and quotes", "The dog -- a \"Lab\" (brown) -- runs...",
			[]string{"the", "dog", "-", "-", "a", "\"", "lab", "\"", "(", "brown", ")", "-", "-", "runs", ".", ".", "."},
			[]string{"The", "dog", "-", "-", "a", "\"", "Lab", "\"", "(", "brown", ")", "-", "-", "runs", ".", ".", "."}},
		{"german umlauts and eszett", "Zwei junge, weiße Männer sind im Freien in der Nähe vieler Büsche.",
			[]string{"zwei", "junge", ",", "weiße", "männer", "sind", "im", "freien", "in", "der", "nähe", "vieler", "büsche", "."},
			[]string{"Zwei", "junge", ",", "weiße", "Männer", "sind", "im", "Freien", "in", "der", "Nähe", "vieler", "Büsche", "."}},
		{"german capital umlauts", "ÄRGER ÜBER ÖL: GRÜẞE AUS DER STRAẞE",
			[]string{"ärger", "über", "öl", ":", "grüße", "aus", "der", "straße"},
			[]string{"ÄRGER", "ÜBER", "ÖL", ":", "GRÜẞE", "AUS", "DER", "STRAẞE"}},
		{"german quotes", "Er sagt „Hallo“ und ‚tschüss‘.",
			[]string{"er", "sagt", "„", "hallo", "“", "und", "‚", "tschüss", "‘", "."},
			[]string{"Er", "sagt", "„", "Hallo", "“", "und", "‚", "tschüss", "‘", "."}},
		{"french apostrophes", "L'homme qu’il voit aujourd'hui.",
			[]string{"l", "'", "homme", "qu", "’", "il", "voit", "aujourd", "'", "hui", "."},
			[]string{"L", "'", "homme", "qu", "’", "il", "voit", "aujourd", "'", "hui", "."}},
		{"french guillemets with no-break spaces", "«\u00a0Va\u00a0!\u00a0» dit-elle\u202f; c'est «\u202fça\u202f».",
			[]string{"«", "va", "!", "»", "dit", "-", "elle", ";", "c", "'", "est", "«", "ça", "»", "."},
			[]string{"«", "Va", "!", "»", "dit", "-", "elle", ";", "c", "'", "est", "«", "ça", "»", "."}},
		{"french typographic spaces", "un\u2009deux\u2002trois\u3000quatre",
			[]string{"un", "deux", "trois", "quatre"},
			[]string{"un", "deux", "trois", "quatre"}},
		{"digits", "3,5 km, 1.000 Leute, 2020er, 42nd, 10% und 7€",
			[]string{"3", ",", "5", "km", ",", "1", ".", "000", "leute", ",", "2020er", ",", "42nd", ",", "10", "%", "und", "7", "€"},
			[]string{"3", ",", "5", "km", ",", "1", ".", "000", "Leute", ",", "2020er", ",", "42nd", ",", "10", "%", "und", "7", "€"}},
		{"unicode digits and fractions", "٣٤ ½ x² ①",
			[]string{"٣٤", "½", "x²", "①"},
			[]string{"٣٤", "½", "x²", "①"}},
		{"punctuation runs", "Wow!!! Really?! ...yes",
			[]string{"wow", "!", "!", "!", "really", "?", "!", ".", ".", ".", "yes"},
			[]string{"Wow", "!", "!", "!", "Really", "?", "!", ".", ".", ".", "yes"}},
		{"underscore is a word character", "snake_case __init__",
			[]string{"snake_case", "__init__"},
			[]string{"snake_case", "__init__"}},
		{"combining mark splits a word", "e\u0301té",
			[]string{"e", "\u0301", "té"},
			[]string{"e", "\u0301", "té"}},
		{"zero-width space is a symbol", "a\u200bb",
			[]string{"a", "\u200b", "b"},
			[]string{"a", "\u200b", "b"}},
		{"python-only whitespace", "a\x1cb\x1fc\u0085d\x0be\u2028f",
			[]string{"a", "b", "c", "d", "e", "f"},
			[]string{"a", "b", "c", "d", "e", "f"}},
		{"tabs and edge whitespace", "\x09  hallo \x09 welt  ",
			[]string{"hallo", "welt"},
			[]string{"hallo", "welt"}},
		{"only whitespace", " \x09\u00a0 ",
			nil,
			nil},
		{"empty", "",
			nil,
			nil},
	}
	lowercase, keepCase := NewRegexTokenizer(true), NewRegexTokenizer(false)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := lowercase.Tokenize(c.in); !reflect.DeepEqual(got, c.lower) {
				t.Errorf("lowercasing: Tokenize(%q) = %q, want %q", c.in, got, c.lower)
			}
			if got := keepCase.Tokenize(c.in); !reflect.DeepEqual(got, c.keep) {
				t.Errorf("keeping case: Tokenize(%q) = %q, want %q", c.in, got, c.keep)
			}
		})
	}
}

func TestTokenizerZeroValueKeepsCase(t *testing.T) {
	var zero RegexTokenizer
	if got, want := zero.Tokenize("Straße ÄRGER"), []string{"Straße", "ÄRGER"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("zero value: got %q, want %q", got, want)
	}
	var _ Tokenizer = &zero
}

// TestTokenizerLowercasesLikeStringsToLower pins the two places where strings.ToLower differs from Python's
// str.lower (documented on RegexTokenizer): Python gives "i\u0307" for "İ" and "ς" for a word-final "Σ".
func TestTokenizerLowercasesLikeStringsToLower(t *testing.T) {
	got := NewRegexTokenizer(true).Tokenize("İSTANBUL ΟΔΟΣ")
	if want := []string{"istanbul", "οδοσ"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestTokenizerKeepsBPEMarkers: with KeepBPEMarkers, "@@" that ends a run of characters stays on the token
// before it; any other "@" is punctuation as usual, and without the option every "@" is.
func TestTokenizerKeepsBPEMarkers(t *testing.T) {
	cases := []struct {
		in          string
		keep, plain []string
	}{
		{"Unter@@ halten", []string{"unter@@", "halten"}, []string{"unter", "@", "@", "halten"}},
		{"ein rie@@ sen@@ großer hund .", []string{"ein", "rie@@", "sen@@", "großer", "hund", "."},
			[]string{"ein", "rie", "@", "@", "sen", "@", "@", "großer", "hund", "."}},
		{"l'@@ homme", []string{"l", "'@@", "homme"}, []string{"l", "'", "@", "@", "homme"}},
		{"end@@", []string{"end@@"}, []string{"end", "@", "@"}},
		{"mail a@@b @@ x", []string{"mail", "a", "@", "@", "b", "@", "@", "x"}, []string{"mail", "a", "@", "@", "b", "@", "@", "x"}},
		{"a@@@ b", []string{"a", "@@@", "b"}, []string{"a", "@", "@", "@", "b"}},
		{"no markers here", []string{"no", "markers", "here"}, []string{"no", "markers", "here"}},
	}
	for _, c := range cases {
		keep := (&RegexTokenizer{Lowercase: true, KeepBPEMarkers: true}).Tokenize(c.in)
		plain := NewRegexTokenizer(true).Tokenize(c.in)
		if !reflect.DeepEqual(keep, c.keep) || !reflect.DeepEqual(plain, c.plain) {
			t.Errorf("Tokenize(%q): keeping markers %q, want %q; plain %q, want %q", c.in, keep, c.keep, plain, c.plain)
		}
	}
}

// TestTokenizerReadsBPEOutputBack: text written by BPE.Apply (attend bpe apply) tokenizes, keeping markers, into
// exactly the subwords written, so a model of words can be trained on it.
func TestTokenizerReadsBPEOutputBack(t *testing.T) {
	tok := NewRegexTokenizer(true)
	lines := []string{"Zwei junge, weiße Männer sind im Freien in der Nähe vieler Büsche.",
		"Ein Mann mit einem orangefarbenen Hut, der etwas anstarrt.", "Don't stop: it's 5 o'clock, isn't it?",
		"3,5 km, 1.000 Leute, 2020er, 42nd, 10% und 7€"}
	var sents [][]string
	for _, l := range lines {
		sents = append(sents, tok.Tokenize(l))
	}
	b := LearnBPE(sents, 40)
	keep := &RegexTokenizer{KeepBPEMarkers: true}
	split := 0
	for _, s := range sents {
		pieces, _ := b.Split(s)
		if len(pieces) > len(s) {
			split++
		}
		if got := keep.Tokenize(strings.Join(pieces, " ")); !reflect.DeepEqual(got, pieces) {
			t.Errorf("%q tokenizes as %q", pieces, got)
		}
	}
	if split == 0 {
		t.Fatal("no word was split: the test tested nothing")
	}
}

func TestWhitespaceTokenizerKeepsTheGivenTokens(t *testing.T) {
	for _, c := range []struct {
		in        string
		lowercase bool
		want      []string
	}{
		{"Mr. Smith , hon. member", false, []string{"Mr.", "Smith", ",", "hon.", "member"}},
		{"  Mr.\tSMITH\u00a0l'homme  ", true, []string{"mr.", "smith", "l'homme"}},
		{" \t ", false, nil},
	} {
		if got := (WhitespaceTokenizer{Lowercase: c.lowercase}).Tokenize(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokenize(%q) with lowercase %v = %q, want %q", c.in, c.lowercase, got, c.want)
		}
	}
}

// TestTokenClassesMatchPattern checks the hand-written tokenizer's character classes against tokenPattern, the
// rule as a regular expression, on every code point: a lone word character is a token, and two of them make one
// token; a lone separator makes none; any other character is a token of its own, even beside another.
func TestTokenClassesMatchPattern(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue // surrogates are not valid in UTF-8 strings
		}
		s := string(r)
		var want uint8
		switch m := tokenPattern.FindAllString(s+s, -1); {
		case len(m) == 0:
			want = classSpace
		case len(m) == 1:
			want = classWord
		default:
			want = classOther
		}
		if got := runeClass(r); got != want {
			t.Fatalf("U+%04X: class %d, the pattern says %d", r, got, want)
		}
	}
}

// TestTokenizeMatchesPattern checks that the hand-written tokenizer splits lines as tokenPattern does, invalid
// UTF-8 included.
func TestTokenizeMatchesPattern(t *testing.T) {
	lines := []string{"", " ", "a", "Ein Mann fährt Fahrrad.", "l'homme, c'est « ça »!", "e\u0301t\u00e9 \u00a0x\u2009y",
		"\tİstanbul ΣΟΦΟΣ\r\n", "snake_case 3.14 $5", "\xff\xfe bad", "a\x1cb\x85c\u2028d", "ab\xffcd\xc3", "\xe2\x82",
		"٣٤ ½ x² ① 日本語のテキスト", "a@@ b@@c", "\ufffd\u200bz"}
	for _, line := range lines {
		for _, lower := range []bool{false, true} {
			want := tokenPattern.FindAllString(line, -1)
			if lower {
				want = tokenPattern.FindAllString(strings.ToLower(line), -1)
			}
			if got := NewRegexTokenizer(lower).Tokenize(line); !reflect.DeepEqual(got, want) {
				t.Errorf("Tokenize(%q) lowercase %v = %q, the pattern gives %q", line, lower, got, want)
			}
		}
	}
}
