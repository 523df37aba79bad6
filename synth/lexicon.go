package synth

import "strings"

// gender is the grammatical gender of a target noun; determiners and adjectives agree with it.
type gender int

const (
	masculine gender = iota
	feminine
	neuter
)

// number is singular or plural; it is chosen per noun phrase.
type number int

const (
	singular number = iota
	plural
)

// noun is one noun of the lexicon: its English singular and plural, its target singular and plural (the
// target plurals are invented and irregular, so they must be learnt per noun) and its target gender.
type noun struct {
	srcSg, srcPl string
	tgtSg, tgtPl string
	gender       gender
}

// verb is one verb: its English past tense (which does not show number, so the target's number suffix must
// come from the subject), its target stem and whether it takes an object.
type verb struct {
	src        string
	tgtStem    string
	transitive bool
}

// adjective is one adjective: its English form and its target stem (inflected by adjectiveSuffix).
type adjective struct {
	src, tgtStem string
}

// adverb is one adverb; it does not inflect.
type adverb struct {
	src, tgt string
}

// definiteness is the kind of determiner a noun phrase has.
type definiteness int

const (
	definite definiteness = iota
	indefinite
)

// nouns is the noun lexicon. English plurals are all distinct from their singulars, so the number of a noun
// phrase can always be read off its source noun ("the" does not show it).
var nouns = [...]noun{
	{"dog", "dogs", "hund", "hunde", masculine},
	{"cat", "cats", "katze", "katzen", feminine},
	{"house", "houses", "haus", "hauser", neuter},
	{"mouse", "mice", "maus", "muse", feminine},
	{"bird", "birds", "vogel", "vogli", masculine},
	{"horse", "horses", "pferd", "pferdo", neuter},
	{"child", "children", "kind", "kinder", neuter},
	{"man", "men", "mann", "manner", masculine},
	{"woman", "women", "frau", "frauke", feminine},
	{"tree", "trees", "baum", "baumer", masculine},
	{"book", "books", "buch", "bucha", neuter},
	{"apple", "apples", "apfel", "apfli", masculine},
	{"boat", "boats", "boot", "boote", neuter},
	{"king", "kings", "konig", "konigo", masculine},
	{"queen", "queens", "konigin", "koninnen", feminine},
	{"door", "doors", "tur", "turen", feminine},
	{"farmer", "farmers", "bauer", "bauern", masculine},
	{"goose", "geese", "gans", "gense", feminine},
	{"wolf", "wolves", "wulf", "wulfe", masculine},
	{"flower", "flowers", "blume", "blumma", feminine},
}

// verbs is the verb lexicon: target form is stem + "et" after a singular subject, stem + "un" after a
// plural one.
var verbs = [...]verb{
	{"saw", "seh", true},
	{"chased", "jag", true},
	{"liked", "mog", true},
	{"found", "find", true},
	{"followed", "folg", true},
	{"heard", "hor", true},
	{"bit", "beis", true},
	{"helped", "help", true},
	{"slept", "schlaf", false},
	{"ran", "lauf", false},
	{"sang", "sing", false},
}

// adjectives is the adjective lexicon; see adjectiveSuffix for the target endings.
var adjectives = [...]adjective{
	{"big", "grot"},
	{"small", "klen"},
	{"old", "alt"},
	{"young", "jung"},
	{"red", "rot"},
	{"black", "schwarz"},
	{"happy", "frol"},
	{"tired", "mud"},
}

// adverbs is the adverb lexicon.
var adverbs = [...]adverb{
	{"quickly", "schnel"},
	{"slowly", "langsam"},
	{"often", "oft"},
	{"quietly", "leis"},
}

// srcDeterminer is the English determiner: "the" for definite phrases of either number, "a" (or "an"
// before a vowel) for indefinite singular and "some" for indefinite plural; next is the word that follows.
func srcDeterminer(def definiteness, num number, next string) string {
	switch {
	case def == definite:
		return "the"
	case num == plural:
		return "some"
	case strings.ContainsRune("aeiou", rune(next[0])):
		return "an"
	default:
		return "a"
	}
}

// tgtDeterminer is the target determiner, which agrees with its noun in number and, in the singular, gender.
func tgtDeterminer(def definiteness, num number, g gender) string {
	if num == plural {
		if def == definite {
			return "dei"
		}
		return "einige"
	}
	if def == definite {
		return [...]string{"der", "die", "das"}[g]
	}
	return [...]string{"ein", "eine", "eines"}[g]
}

// adjectiveSuffix is the target adjective ending, which agrees with the noun in number and, in the
// singular, gender.
func adjectiveSuffix(num number, g gender) string {
	if num == plural {
		return "en"
	}
	return [...]string{"er", "e", "es"}[g]
}

// verbSuffix is the target verb ending, which agrees with the subject in number.
func verbSuffix(num number) string {
	if num == plural {
		return "un"
	}
	return "et"
}
