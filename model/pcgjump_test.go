package model

import (
	"math/rand/v2"
	"testing"
)

// TestJumpPCG checks jumpPCG against drawing n times from the PCG itself: the states must be equal, and so must
// the next draws of a PCG set to the jumped state and of the one that drew.
func TestJumpPCG(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 2}, {1<<63 + 5, 1<<64 - 1}} {
		for _, n := range []uint64{0, 1, 2, 1000, 12345} {
			stepped := rand.NewPCG(seed[0], seed[1])
			start, err := pcgState(stepped)
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				stepped.Uint64()
			}
			want, err := pcgState(stepped)
			if err != nil {
				t.Fatal(err)
			}
			got := jumpPCG(start, n)
			if got != want {
				t.Errorf("seed %v: jump by %d = %x, drawing %d times gives %x", seed, n, got, n, want)
				continue
			}
			jumped := rand.NewPCG(0, 0)
			setPCGState(jumped, got)
			for i := range 3 {
				if a, b := jumped.Uint64(), stepped.Uint64(); a != b {
					t.Errorf("seed %v, n %d: draw %d after the jump %#x, after drawing %#x", seed, n, i, a, b)
				}
			}
		}
	}
}

// TestPCGState checks that pcgState reads the state NewPCG sets (seed1 the high half, seed2 the low) and that
// setPCGState puts it back: a PCG set to another's state draws what that one draws.
func TestPCGState(t *testing.T) {
	p := rand.NewPCG(3, 4)
	s, err := pcgState(p)
	if err != nil {
		t.Fatal(err)
	}
	if s != (uint128{hi: 3, lo: 4}) {
		t.Fatalf("state of NewPCG(3, 4) = %x", s)
	}
	p.Uint64()
	if s, err = pcgState(p); err != nil {
		t.Fatal(err)
	}
	q := rand.NewPCG(0, 0)
	setPCGState(q, s)
	if a, b := q.Uint64(), p.Uint64(); a != b {
		t.Errorf("after setPCGState: %#x, want %#x", a, b)
	}
}
