//go:build !linux || !amd64 || purego

package kernels

import "errors"

// amxPermit reports that tile instructions are not used in this build: AMX is wired up only on linux/amd64.
func amxPermit() error { return errors.New("kernels: AMX is used only on linux/amd64 without purego") }

// amxStrip is never called where amxPermit fails.
func amxStrip(cfg *[64]byte, a *uint16, lda int, b *uint32, panel int, c *float32, ldc int, kBlocks, mBlocks, acc int) {
	panic("kernels: amxStrip without AMX")
}

// amxVectorRound reports that the rounding kernels are not here.
func amxVectorRound() bool { return false }

// amxRoundPairs is never called where amxVectorRound is false.
func amxRoundPairs(lo, hi *float32, dst *uint32, n, dstStride int) {
	panic("kernels: amxRoundPairs without AVX-512")
}

// amxRoundRow is never called where amxVectorRound is false.
func amxRoundRow(x *float32, dst *uint16, n int) { panic("kernels: amxRoundRow without AVX-512") }

// amxSplitRow is never called where amxVectorRound is false.
func amxSplitRow(x *float32, hi, lo *uint16, n int) {
	panic("kernels: amxSplitRow without AVX-512")
}

// amxSplitPairs is never called where amxVectorRound is false.
func amxSplitPairs(even, odd *float32, hi, lo *uint32, n, dstStride int) {
	panic("kernels: amxSplitPairs without AVX-512")
}

// amxGatherPairs is never called where amxVectorRound is false.
func amxGatherPairs(src *uint32, stride int, dst *uint32, pairs int) {
	panic("kernels: amxGatherPairs without AVX-512")
}

// amxGatherRoundRow is never called where amxVectorRound is false.
func amxGatherRoundRow(x *float32, stride int, dst *uint16, n int) {
	panic("kernels: amxGatherRoundRow without AVX-512")
}

// amxGatherSplitRow is never called where amxVectorRound is false.
func amxGatherSplitRow(x *float32, stride int, hi, lo *uint16, n int) {
	panic("kernels: amxGatherSplitRow without AVX-512")
}
