package align

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/data"
)

// ErrBadLink is the cause of a ParseError for a field that is not a Pharaoh link "i-j" or "ipj" of
// non-negative integers.
var ErrBadLink = errors.New("not a link i-j or ipj")

// ErrZeroPosition is the cause of a ParseError for a link with a position 0 in a file read as one-based, whose
// positions count from 1: the file is probably 0-based.
var ErrZeroPosition = errors.New("position 0 in a one-based file")

// ErrOutOfRange is the cause of a ParseError for a link to a position beyond its sentence (see CheckLengths).
var ErrOutOfRange = errors.New("link beyond the sentence")

// ParseError is a bad line of a Pharaoh alignment file.
type ParseError struct {
	File string // the name given to ReadPharaoh
	Line int    // 1-based
	Err  error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("align: %s line %d: %v", e.File, e.Line, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// FormatPharaoh writes one sentence's links in Pharaoh format: space-separated "i-j" pairs, source position
// first, 0-based unless oneBased, with "ipj" for a possible link, in the order given.
func FormatPharaoh(links []Link, oneBased bool) string {
	var b strings.Builder
	base := 0
	if oneBased {
		base = 1
	}
	for k, l := range links {
		if k > 0 {
			b.WriteByte(' ')
		}
		sep := "-"
		if l.Possible {
			sep = "p"
		}
		b.WriteString(strconv.Itoa(l.Src + base))
		b.WriteString(sep)
		b.WriteString(strconv.Itoa(l.Tgt + base))
	}
	return b.String()
}

// ParsePharaoh reads one line of Pharaoh links (see FormatPharaoh); an empty or blank line has no links. The
// returned positions are 0-based. A bad field gives an error wrapping ErrBadLink, a position 0 when oneBased one
// wrapping ErrZeroPosition.
func ParsePharaoh(line string, oneBased bool) ([]Link, error) {
	fields := strings.Fields(line)
	links := make([]Link, 0, len(fields))
	base := 0
	if oneBased {
		base = 1
	}
	for _, f := range fields {
		sep := strings.IndexAny(f, "-p")
		if sep <= 0 {
			return nil, fmt.Errorf("%w: %q", ErrBadLink, f)
		}
		src, err1 := strconv.Atoi(f[:sep])
		tgt, err2 := strconv.Atoi(f[sep+1:])
		if err1 != nil || err2 != nil || src < 0 || tgt < 0 || strings.ContainsAny(f[sep+1:], "+-") {
			return nil, fmt.Errorf("%w: %q", ErrBadLink, f)
		}
		if src < base || tgt < base {
			return nil, fmt.Errorf("%q: %w (is the file 0-based? then drop --one-based)", f, ErrZeroPosition)
		}
		links = append(links, Link{Src: src - base, Tgt: tgt - base, Possible: f[sep] == 'p'})
	}
	return links, nil
}

// ReadPharaoh reads a Pharaoh alignment file, one sentence per line; name is used in errors, which are
// *ParseError values naming the line.
func ReadPharaoh(r io.Reader, name string, oneBased bool) ([][]Link, error) {
	lines := data.NewLines(r, name)
	var out [][]Link
	for lines.Scan() {
		links, err := ParsePharaoh(lines.Text(), oneBased)
		if err != nil {
			return nil, &ParseError{File: name, Line: lines.Line(), Err: err}
		}
		out = append(out, links)
	}
	if err := lines.Err(); err != nil {
		return nil, err // a *data.ParseError, naming the file and the line
	}
	return out, nil
}

// CheckLengths checks the gold links of a corpus against its sentences' lengths: gold[k] are the links of the
// sentence pair whose source has srcLens[k] words and target tgtLens[k]. The first link to a position beyond
// its sentence gives a *ParseError (cause ErrOutOfRange) naming file and line k+1 of the gold file, the link as
// written (oneBased as read) and the two lengths. It panics unless the three slices have the same length.
func CheckLengths(gold [][]Link, srcLens, tgtLens []int, file string, oneBased bool) error {
	if len(srcLens) != len(gold) || len(tgtLens) != len(gold) {
		panic(fmt.Sprintf("align: CheckLengths of %d gold lines for %d and %d sentences", len(gold), len(srcLens), len(tgtLens)))
	}
	for k, links := range gold {
		for _, l := range links {
			if l.Src >= srcLens[k] || l.Tgt >= tgtLens[k] {
				return &ParseError{File: file, Line: k + 1, Err: fmt.Errorf("%w: %s, but the pair has %d source and %d target words",
					ErrOutOfRange, FormatPharaoh([]Link{l}, oneBased), srcLens[k], tgtLens[k])}
			}
		}
	}
	return nil
}
