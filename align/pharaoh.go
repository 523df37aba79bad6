package align

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrBadLink is the cause of a ParseError for a field that is not a Pharaoh link "i-j" or "ipj" with
// non-negative (or, 1-based, positive) integers.
var ErrBadLink = errors.New("not a link i-j or ipj")

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
// returned positions are 0-based. A bad field gives an error wrapping ErrBadLink.
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
		if err1 != nil || err2 != nil || src < base || tgt < base || strings.ContainsAny(f[sep+1:], "+-") {
			return nil, fmt.Errorf("%w: %q", ErrBadLink, f)
		}
		links = append(links, Link{Src: src - base, Tgt: tgt - base, Possible: f[sep] == 'p'})
	}
	return links, nil
}

// ReadPharaoh reads a Pharaoh alignment file, one sentence per line; name is used in errors, which are
// *ParseError values naming the line.
func ReadPharaoh(r io.Reader, name string, oneBased bool) ([][]Link, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	var out [][]Link
	for line := 1; sc.Scan(); line++ {
		links, err := ParsePharaoh(sc.Text(), oneBased)
		if err != nil {
			return nil, &ParseError{File: name, Line: line, Err: err}
		}
		out = append(out, links)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("align: read %s: %w", name, err)
	}
	return out, nil
}
