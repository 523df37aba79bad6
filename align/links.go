package align

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Link is one alignment link between source position Src and target position Tgt, both 0-based. Possible marks
// a possible (rather than sure) link of a gold alignment (Och and Ney 2003); predicted links are sure.
type Link struct {
	Src, Tgt int
	Possible bool
}

// Sort orders links by source position, then target position, in place, and returns them.
func Sort(links []Link) []Link {
	slices.SortFunc(links, func(a, b Link) int {
		if c := cmp.Compare(a.Src, b.Src); c != 0 {
			return c
		}
		return cmp.Compare(a.Tgt, b.Tgt)
	})
	return links
}

// Transpose swaps the source and target side of every link: the links of a reverse (target→source) model
// become links of the forward direction. It returns a new slice.
func Transpose(links []Link) []Link {
	out := make([]Link, len(links))
	for i, l := range links {
		out[i] = Link{Src: l.Tgt, Tgt: l.Src, Possible: l.Possible}
	}
	return out
}

// Hard turns soft attention into hard links. attention[t][i] is the weight of source position i when target
// token t was produced; only the first tgtLen rows (the output words: a final </s> row is never aligned) and
// the first srcLen columns (the real source words: padding is never aligned) are read.
//
// With threshold <= 0 each target word is linked to the source word it attended to most (the first one on a
// tie): argmax alignment, one link per target word. With threshold > 0 every weight at or above threshold
// gives a link, so a target word may have none or several. The links come sorted by source, then target.
// Hard panics if attention has fewer than tgtLen rows or a row shorter than srcLen.
func Hard(attention [][]float32, srcLen, tgtLen int, threshold float64) []Link {
	if len(attention) < tgtLen {
		panic(fmt.Sprintf("align: Hard of %d attention rows for %d target words", len(attention), tgtLen))
	}
	links := make([]Link, 0, tgtLen)
	for t, row := range attention[:tgtLen] {
		if len(row) < srcLen {
			panic(fmt.Sprintf("align: Hard: attention row %d has %d weights for %d source words", t, len(row), srcLen))
		}
		row = row[:srcLen]
		if threshold > 0 {
			for i, w := range row {
				if float64(w) >= threshold {
					links = append(links, Link{Src: i, Tgt: t})
				}
			}
			continue
		}
		if srcLen == 0 {
			continue
		}
		best := 0
		for i, w := range row {
			if w > row[best] {
				best = i
			}
		}
		links = append(links, Link{Src: best, Tgt: t})
	}
	return Sort(links)
}

// Symmetrization names a way to combine the links of a forward and a reverse model.
type Symmetrization string

// The symmetrizations Symmetrize knows.
const (
	Intersection     Symmetrization = "intersection"
	Union            Symmetrization = "union"
	GrowDiag         Symmetrization = "grow-diag"
	GrowDiagFinal    Symmetrization = "grow-diag-final"
	GrowDiagFinalAnd Symmetrization = "grow-diag-final-and"
	Forward          Symmetrization = "forward" // the forward links alone
	Reverse          Symmetrization = "reverse" // the reverse links alone
)

// Symmetrizations lists the known methods, those that combine both directions first.
func Symmetrizations() []Symmetrization {
	return []Symmetrization{GrowDiagFinalAnd, GrowDiagFinal, GrowDiag, Intersection, Union, Forward, Reverse}
}

// Validate reports an error naming the known methods if s is not one of them.
func (s Symmetrization) Validate() error {
	known := Symmetrizations()
	if slices.Contains(known, s) {
		return nil
	}
	names := make([]string, len(known))
	for k, m := range known {
		names[k] = string(m)
	}
	return fmt.Errorf("align: unknown symmetrization %q (want %s)", string(s), strings.Join(names, ", "))
}

// Symmetrize combines the links of one sentence found by a forward (source→target) model and by a reverse
// model, the latter already in forward orientation (see Transpose), as Koehn et al. (2003) and Moses do.
// Intersection keeps the links both found (high precision), Union all of them (high recall). GrowDiag starts
// from the intersection and, until nothing changes, visits the accepted links in order of source then target
// position and adds each neighbour (horizontal, vertical, then diagonal) that is in the union and covers a
// source or a target word not yet aligned. GrowDiagFinal then adds, from the forward and then the reverse links
// in order, those that cover a source or a target word still unaligned; GrowDiagFinalAnd only those whose source
// and target words are both unaligned. Forward and Reverse return one side alone. The result is sorted by
// source, then target; it panics on an unknown method (check it with Validate).
func Symmetrize(forward, reverse []Link, method Symmetrization) []Link {
	type pair struct{ src, tgt int }
	fwd, rev := map[pair]bool{}, map[pair]bool{}
	srcLen, tgtLen := 0, 0
	for _, l := range forward {
		fwd[pair{l.Src, l.Tgt}] = true
		srcLen, tgtLen = max(srcLen, l.Src+1), max(tgtLen, l.Tgt+1)
	}
	for _, l := range reverse {
		rev[pair{l.Src, l.Tgt}] = true
		srcLen, tgtLen = max(srcLen, l.Src+1), max(tgtLen, l.Tgt+1)
	}
	result := map[pair]bool{}
	srcAligned, tgtAligned := make([]bool, srcLen), make([]bool, tgtLen)
	add := func(p pair) {
		result[p] = true
		srcAligned[p.src], tgtAligned[p.tgt] = true, true
	}
	switch method {
	case Forward:
		return Sort(slices.Clone(forward))
	case Reverse:
		return Sort(slices.Clone(reverse))
	case Union:
		for p := range fwd {
			add(p)
		}
		for p := range rev {
			add(p)
		}
	case Intersection, GrowDiag, GrowDiagFinal, GrowDiagFinalAnd:
		for p := range fwd {
			if rev[p] {
				add(p)
			}
		}
	default:
		panic(Symmetrization.Validate(method))
	}
	if method == GrowDiag || method == GrowDiagFinal || method == GrowDiagFinalAnd {
		neighbours := [8]pair{{-1, 0}, {0, -1}, {1, 0}, {0, 1}, {-1, -1}, {-1, 1}, {1, -1}, {1, 1}}
		for grown := true; grown; {
			grown = false
			for s := 0; s < srcLen; s++ {
				for t := 0; t < tgtLen; t++ {
					if !result[pair{s, t}] {
						continue
					}
					for _, d := range neighbours {
						n := pair{s + d.src, t + d.tgt}
						if n.src < 0 || n.tgt < 0 || n.src >= srcLen || n.tgt >= tgtLen || result[n] {
							continue
						}
						if (!srcAligned[n.src] || !tgtAligned[n.tgt]) && (fwd[n] || rev[n]) {
							add(n)
							grown = true
						}
					}
				}
			}
		}
	}
	if method == GrowDiagFinal || method == GrowDiagFinalAnd {
		for _, side := range []map[pair]bool{fwd, rev} {
			for s := 0; s < srcLen; s++ {
				for t := 0; t < tgtLen; t++ {
					p := pair{s, t}
					if !side[p] || result[p] {
						continue
					}
					if method == GrowDiagFinal && (!srcAligned[s] || !tgtAligned[t]) ||
						method == GrowDiagFinalAnd && !srcAligned[s] && !tgtAligned[t] {
						add(p)
					}
				}
			}
		}
	}
	links := make([]Link, 0, len(result))
	for p := range result {
		links = append(links, Link{Src: p.src, Tgt: p.tgt})
	}
	return Sort(links)
}
