package model

import (
	"math/rand/v2"

	"github.com/attend-nmt/attend/kernels"
)

// minDrawsPerWorker is the fewest 64-bit draws (two mask values each) that fillDropoutMask gives a goroutine of
// its own; a mask of fewer than twice as many draws is drawn on the calling goroutine. On 2 cores, splitting a
// mask in two only paid from about 80,000 values on (the hand-off costs tens of µs); from 2·2¹⁵ draws (131,072
// values) on, the split draws take three quarters of the time of the serial ones, and at 917,504 values half.
const minDrawsPerWorker = 1 << 15

// fillDropoutMask sets each value of mask to 0 with probability p and to 1/(1-p) otherwise (inverted dropout).
// Each 64-bit draw of rng decides two values, one per 32-bit half (u < p·2³²): half the draws of one
// rng.Float64 per value, and no conversion, for the millions of values a step masks.
//
// When rng is a *rand.PCG and the mask is long, the draws are shared out among the cores (fillMaskParallel):
// the mask and the state rng is left in are exactly those of drawing one value after another, so a training
// run does not depend on the number of cores. Any other source draws on the calling goroutine.
func fillDropoutMask[T kernels.Float](mask []T, p float64, rng rand.Source) {
	keep := T(1 / (1 - p))
	threshold := uint64(p * (1 << 32))
	if pcg, ok := rng.(*rand.PCG); ok && maskDraws(len(mask)) >= 2*minDrawsPerWorker {
		if fillMaskParallel(mask, keep, threshold, pcg, minDrawsPerWorker) == nil {
			return
		}
		// The PCG's state could not be read (pcgState): nothing was drawn, so draw here instead.
	}
	fillMask(mask, keep, threshold, rng)
}

// maskDraws is the number of 64-bit draws a mask of n values takes: one for every two values.
func maskDraws(n int) int {
	return (n + 1) / 2
}

// fillMask is fillDropoutMask's draw on the calling goroutine: mask[i] is 0 when its 32-bit half of draw i/2 is
// below threshold (the low half for even i, the high half for odd i), and keep otherwise.
func fillMask[T kernels.Float](mask []T, keep T, threshold uint64, rng rand.Source) {
	for i := 0; i < len(mask); i += 2 {
		u := rng.Uint64()
		a, b := keep, keep // selected, not branched on: the outcomes are random, so a branch mispredicts
		if u&(1<<32-1) < threshold {
			a = 0
		}
		if u>>32 < threshold {
			b = 0
		}
		mask[i] = a
		if i+1 < len(mask) {
			mask[i+1] = b
		}
	}
}

// fillMaskParallel is fillMask from pcg with the draws split into contiguous ranges, at least grain draws
// each, one per core (kernels.Parallel). Each range draws from its own PCG, set to pcg's state jumped ahead to
// the range's first draw (jumpPCG), and fills the values of those draws (an even number of values in every
// range but the last, whose last draw may be used by half); pcg is then set to the state after all the draws.
// So the mask, and pcg's next draws, are bit for bit those of fillMask. On an error pcg is left untouched and
// mask is not written.
func fillMaskParallel[T kernels.Float](mask []T, keep T, threshold uint64, pcg *rand.PCG, grain int) error {
	start, err := pcgState(pcg)
	if err != nil {
		return err
	}
	draws := maskDraws(len(mask))
	kernels.Parallel(draws, grain, func(lo, hi int) {
		var part rand.PCG
		setPCGState(&part, jumpPCG(start, uint64(lo)))
		fillMask(mask[2*lo:min(2*hi, len(mask))], keep, threshold, &part)
	})
	setPCGState(pcg, jumpPCG(start, uint64(draws)))
	return nil
}
