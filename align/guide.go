package align

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
)

// Guided alignment (train.guided_alignment) trains the attention toward alignment links, as Marian's
// --guided-alignment with its "ce" cost does: for target position t with links to source positions i, the gold
// g_t is those positions, each 1/(number of the position's links) (a distribution over the source), and the
// loss of a step is the cross-entropy −Σ_i g_ti log(a_ti + ε) of the attention weights a_t. A target position
// without links has g_t = 0 and adds nothing.

// GuideEpsilon is ε of the guided-alignment loss, Marian's: a weight of 0 costs −log ε, not infinity.
const GuideEpsilon = 1e-6

// FillGuide writes the gold distributions of row r of a batch into guide, (tgtLen, rows, srcLen) time-major as
// the decoder's steps are: for every target position t < tgtLen with links, 1/n at each of its n links' source
// positions (a position linked twice gets 2/n); the row's other values are set to 0. It panics on a link beyond
// srcLen or tgtLen: links are checked against their sentences when read (CheckLengths).
func FillGuide[T kernels.Float](guide []T, rows, srcLen, tgtLen, r int, links []Link) {
	if len(guide) != tgtLen*rows*srcLen || r < 0 || r >= rows {
		panic(fmt.Sprintf("align: FillGuide of row %d in %d values for %d×%d×%d", r, len(guide), tgtLen, rows, srcLen))
	}
	count := make([]int, tgtLen)
	for _, l := range links {
		if l.Src >= srcLen || l.Tgt >= tgtLen || l.Src < 0 || l.Tgt < 0 {
			panic(fmt.Sprintf("align: FillGuide link %d-%d beyond %d source and %d target positions", l.Src, l.Tgt, srcLen, tgtLen))
		}
		count[l.Tgt]++
	}
	for t := 0; t < tgtLen; t++ {
		clear(guide[(t*rows+r)*srcLen : (t*rows+r+1)*srcLen])
	}
	for _, l := range links {
		guide[(l.Tgt*rows+r)*srcLen+l.Src] += T(1 / float64(count[l.Tgt]))
	}
}

// SpreadLinks brings links between words to the subwords (pieces) the words were split into, as Marian and
// OpenNMT-py guide subword models: a link between source word i and target word j becomes a link between every
// piece of word i and every piece of word j, so that FillGuide spreads each target piece's gold evenly over the
// pieces of the source words its word is linked to. srcWordOf and tgtWordOf give the word of each piece of the
// two sides, as data.BPE.Split does. The links come sorted by source, then target piece, and keep their
// Possible marks. It panics on a link to a word without pieces (beyond its sentence): links are checked against
// their sentences' words when read (CheckLengths).
func SpreadLinks(links []Link, srcWordOf, tgtWordOf []int) []Link {
	srcPieces, tgtPieces := piecesOf(srcWordOf), piecesOf(tgtWordOf)
	var out []Link
	for _, l := range links {
		if l.Src < 0 || l.Tgt < 0 || l.Src >= len(srcPieces) || l.Tgt >= len(tgtPieces) || len(srcPieces[l.Src]) == 0 || len(tgtPieces[l.Tgt]) == 0 {
			panic(fmt.Sprintf("align: SpreadLinks of link %d-%d over %d source and %d target pieces", l.Src, l.Tgt, len(srcWordOf), len(tgtWordOf)))
		}
		for _, s := range srcPieces[l.Src] {
			for _, t := range tgtPieces[l.Tgt] {
				out = append(out, Link{Src: s, Tgt: t, Possible: l.Possible})
			}
		}
	}
	return Sort(out)
}

// piecesOf lists the pieces of each word, given the word of each piece.
func piecesOf(wordOf []int) [][]int {
	words := 0
	for _, w := range wordOf {
		words = max(words, w+1)
	}
	pieces := make([][]int, words)
	for p, w := range wordOf {
		pieces[w] = append(pieces[w], p)
	}
	return pieces
}

// GuideLoss returns −Σ guide_i log(weights_i + ε) over weights and guide of the same length.
func GuideLoss[T kernels.Float](weights, guide []T) float64 {
	if len(weights) != len(guide) {
		panic(fmt.Sprintf("align: GuideLoss of %d weights and %d gold values", len(weights), len(guide)))
	}
	var sum float64
	for i, g := range guide {
		if g != 0 {
			sum -= float64(g) * math.Log(float64(weights[i])+GuideEpsilon)
		}
	}
	return sum
}

// GuideBackward adds scale times the gradient of GuideLoss, −scale·guide_i / (weights_i + ε), into dWeights.
func GuideBackward[T kernels.Float](weights, guide []T, scale T, dWeights []T) {
	if len(weights) != len(guide) || len(dWeights) != len(guide) {
		panic(fmt.Sprintf("align: GuideBackward of %d weights, %d gold values, %d gradients", len(weights), len(guide), len(dWeights)))
	}
	for i, g := range guide {
		if g != 0 {
			dWeights[i] -= scale * g / (weights[i] + GuideEpsilon)
		}
	}
}

// GuideGraph is GuideLoss in a training graph: the scalar −Σ guide ⊙ log(weights + ε) of two nodes of the
// same shape.
func GuideGraph[T kernels.Float](weights, guide *G.Node) *G.Node {
	eps := G.NewConstant(T(GuideEpsilon))
	logs := G.Must(G.Log(G.Must(G.Add(weights, eps))))
	return G.Must(G.Neg(G.Must(G.Sum(G.Must(G.HadamardProd(guide, logs))))))
}
