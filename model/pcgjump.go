package model

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// This file jumps a math/rand/v2 PCG ahead by any number of draws without making them, so that several
// goroutines can each make their own share of one stream of draws (see fillDropoutMask).
//
// Go's PCG (math/rand/v2/pcg.go) is a 128-bit linear congruential generator: every draw first advances the
// state s to s·mul + inc (mod 2¹²⁸), then returns a scrambled copy of the new state. n draws advance it by the
// affine map s ↦ s·mulⁿ + inc·(mulⁿ⁻¹ + … + mul + 1), which jumpPCG computes in O(log n) steps by repeated
// squaring (F. B. Brown, "Random number generation with arbitrary strides", 1994).

// The multiplier and the increment of Go's PCG, high and low 64 bits (the constants of PCG.next in pcg.go).
const (
	pcgMulHi = 2549297995355413924
	pcgMulLo = 4865540595714422341
	pcgIncHi = 6364136223846793005
	pcgIncLo = 1442695040888963407
)

// uint128 is an unsigned 128-bit integer; its arithmetic is modulo 2¹²⁸, as the PCG's is.
type uint128 struct{ hi, lo uint64 }

// add returns x + y mod 2¹²⁸.
func (x uint128) add(y uint128) uint128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, carry)
	return uint128{hi: hi, lo: lo}
}

// mul returns x · y mod 2¹²⁸ (the product of the high words overflows entirely and is left out).
func (x uint128) mul(y uint128) uint128 {
	hi, lo := bits.Mul64(x.lo, y.lo)
	hi += x.hi*y.lo + x.lo*y.hi
	return uint128{hi: hi, lo: lo}
}

// jumpPCG returns the PCG state that n draws from state s lead to: s after n steps of s ↦ s·mul + inc.
func jumpPCG(s uint128, n uint64) uint128 {
	// Invariant: the first bits of n taken so far form the map s ↦ s·accMul + accInc, and stepMul, stepInc is
	// the map of 2^k steps for the bit k to take next.
	accMul, accInc := uint128{lo: 1}, uint128{}
	stepMul, stepInc := uint128{hi: pcgMulHi, lo: pcgMulLo}, uint128{hi: pcgIncHi, lo: pcgIncLo}
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			// Apply the 2^k steps after those taken so far: s·accMul·stepMul + accInc·stepMul + stepInc.
			accMul = accMul.mul(stepMul)
			accInc = accInc.mul(stepMul).add(stepInc)
		}
		// Twice the 2^k steps: s·stepMul² + stepInc·(stepMul + 1).
		stepInc = stepInc.mul(stepMul.add(uint128{lo: 1}))
		stepMul = stepMul.mul(stepMul)
	}
	return s.mul(accMul).add(accInc)
}

// pcgState reads p's 128-bit state through its binary encoding: "pcg:" and then the high and the low 64 bits,
// big-endian (PCG.AppendBinary).
func pcgState(p *rand.PCG) (uint128, error) {
	b, err := p.MarshalBinary()
	if err != nil {
		return uint128{}, fmt.Errorf("model: reading the PCG's state: %w", err)
	}
	if len(b) != 20 || string(b[:4]) != "pcg:" {
		return uint128{}, fmt.Errorf("model: reading the PCG's state: unknown encoding %q", b)
	}
	return uint128{hi: binary.BigEndian.Uint64(b[4:12]), lo: binary.BigEndian.Uint64(b[12:20])}, nil
}

// setPCGState sets p's state to s: Seed(hi, lo) stores its two arguments as the state's high and low halves.
func setPCGState(p *rand.PCG, s uint128) {
	p.Seed(s.hi, s.lo)
}
