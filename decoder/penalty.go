package decoder

import (
	"math"

	"github.com/attend-nmt/attend/internal/bound"
)

// Largest weights of the penalties and largest length ratio: past them a search setting means nothing more
// (GNMT's α and β are below 1; an α of 10 already divides a 80-word hypothesis' log-probability by 3e11) and
// soon means nonsense (an α of 1e308 makes every length penalty +Inf and every score 0, so the ranking is
// arbitrary).
const (
	MaxAlpha       = 10
	MaxBeta        = 10
	MaxLengthRatio = 1000
)

// AlphaRange is the range of GNMT's length-penalty exponent α: decode.alpha, --alpha and a request's alpha all
// hold to it.
func AlphaRange() bound.Range { return bound.Between(0, MaxAlpha, "0: no length penalty") }

// BetaRange is the range of GNMT's coverage-penalty weight β (--beta).
func BetaRange() bound.Range { return bound.Between(0, MaxBeta, "0: no coverage penalty") }

// LengthRatioRange is the range of BeamOptions.MaxLenRatio (--max-len-ratio).
func LengthRatioRange() bound.Range { return bound.Between(0, MaxLengthRatio, "0: no such limit") }

// LengthPenalty is GNMT's length normalisation (Wu et al. 2016, eq. 14): lp(Y) = ((5 + |Y|) / 6)^α, by which a
// hypothesis' log-probability is divided. α = 0 gives 1 (no normalisation); larger α favours longer outputs.
// length counts the emitted words, and the final </s> when there is one.
func LengthPenalty(length int, alpha float64) float64 {
	if alpha == 0 {
		return 1
	}
	return math.Pow((5+float64(length))/6, alpha)
}

// CoveragePenalty is GNMT's coverage penalty (eq. 14): cp = β Σ_i log(min(Σ_t a_ti, 1)), summed over the source
// words i of the attention rows a_t of one hypothesis. It is 0 when every source word got a total weight of at
// least 1 and negative otherwise, so it is added to the score to favour hypotheses that attended to the whole
// source. β = 0 gives 0. A source word that got no weight at all gives -Inf.
func CoveragePenalty(attention [][]float32, beta float64) float64 {
	if beta == 0 || len(attention) == 0 {
		return 0
	}
	cp := 0.0
	for i := range attention[0] {
		total := 0.0
		for _, row := range attention {
			total += float64(row[i])
		}
		cp += math.Log(min(total, 1))
	}
	return beta * cp
}
