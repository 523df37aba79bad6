package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// newTeam returns n AMXOutputs made together, split or not.
func newTeam(t *testing.T, n int, split bool) []*AMXOutput {
	t.Helper()
	outs, err := NewAMXOutputs(n, split)
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// runTeam runs OutputXent on case c with its rows shared out between the AMXOutputs outs, made together, member
// m taking sizes[m] rows, as one team (OutputTeam), and returns the summed loss, the members' dx side by side and
// the sums of their dw and db, and each member's own dw.
func (c xentAMXCase) runTeam(outs []*AMXOutput, sizes []int) (loss float64, dx, dw, db []float32, dws [][]float32) {
	n, in, v := xentAMXRows, xentAMXIn, xentAMXVocab
	team := outs[0].Team()
	team.Begin(outs)
	defer team.End()
	dx, dw, db = make([]float32, n*in), make([]float32, in*v), make([]float32, v)
	dws, dbs, losses := make([][]float32, len(sizes)), make([][]float32, len(sizes)), make([]float64, len(sizes))
	var wg sync.WaitGroup
	first := 0
	for m, rows := range sizes {
		from := first
		first += rows
		dws[m], dbs[m] = make([]float32, in*v), make([]float32, v)
		wg.Go(func() {
			scratch := make([]float32, min(xentAMXChunk, rows)*v) // as graph.OutputXent sizes it: short for a team's chunks
			losses[m] = OutputXent(c.x[from*in:(from+rows)*in], c.w, c.b, c.targets[from:from+rows], xentAMXPad, rows, in, v,
				xentAMXChunk, xentAMXSmoothing, dx[from*in:(from+rows)*in], dws[m], dbs[m], scratch, outs[m])
		})
	}
	wg.Wait()
	for m := range sizes {
		loss += losses[m]
		Axpy(1, dws[m], dw)
		Axpy(1, dbs[m], db)
	}
	return loss, dx, dw, db, dws
}

// TestOutputTeamMatchesTheWholeLayer shares a case's rows out between teams of two and three members of uneven
// shares (one member with a single row), split (bfloat16x3) and not, and checks the summed figures against the
// float64 computation within requireXentFigures' bounds; that each member's dw holds its own share of the words
// only (the team did share the vocabulary out); that a call after End runs alone and gives an AMXOutput of its
// own's figures bit for bit; and that the team then gives its first figures again (the shares' packings lie in
// the whole layer's storage).
func TestOutputTeamMatchesTheWholeLayer(t *testing.T) {
	skipWithoutBF16Products(t, false)
	c := newXentAMXCase(rand.New(rand.NewPCG(31, 32)))
	bf16 := func(v float64) float64 { return float64(FromBF16(ToBF16(float32(v)))) }
	for _, split := range []bool{true, false} {
		if err := bf16Permit(split); err != nil { // bfloat16x3 needs AMX
			t.Logf("split %v: %v", split, err)
			continue
		}
		round, lossTol := exact, 1e-6
		if !split {
			round, lossTol = bf16, 1e-5
		}
		wantLoss, wantDx, wantDw, wantDb, absDx, absDw := c.reference(round)
		for _, sizes := range [][]int{{37, 63}, {1, 50, 49}, {60, 40}} {
			loss, dx, dw, db, dws := c.runTeam(newTeam(t, len(sizes), split), sizes)
			if d := math.Abs(loss - wantLoss); d > lossTol*math.Abs(wantLoss) {
				t.Fatalf("split %v, rows %v: loss %.9g, float64 gives %.9g", split, sizes, loss, wantLoss)
			}
			requireXentFigures(t, fmt.Sprintf("split %v, rows %v: ", split, sizes), split, dx, dw, db, wantDx, wantDw, wantDb, absDx, absDw)
			for m, own := range dws {
				lo, hi := shareOf(xentAMXVocab, len(sizes), m)
				for i, g := range own {
					if j := i % xentAMXVocab; (j < lo || j >= hi) && g != 0 {
						t.Fatalf("split %v, rows %v: member %d's dw has %g in column %d, outside its share [%d, %d)", split, sizes, m, g, j, lo, hi)
					}
				}
			}
		}
		// After End, one call runs the whole layer alone, its packing in the storage the shares took; and the
		// team again gives its first figures.
		outs := newTeam(t, 2, split)
		loss, dx, dw, db, _ := c.runTeam(outs, []int{60, 40})
		own, err := newAMXOutput(split)
		if err != nil {
			t.Fatal(err)
		}
		aloneL, aloneDx, aloneDw, aloneDb := c.run(outs[1])
		wantL, wantDx32, wantDw32, wantDb32 := c.run(own)
		if aloneL != wantL || !slices.Equal(aloneDx, wantDx32) || !slices.Equal(aloneDw, wantDw32) || !slices.Equal(aloneDb, wantDb32) {
			t.Fatalf("split %v: a call after End differs from an AMXOutput of its own", split)
		}
		againL, againDx, againDw, againDb, _ := c.runTeam(outs, []int{60, 40})
		if againL != loss || !slices.Equal(againDx, dx) || !slices.Equal(againDw, dw) || !slices.Equal(againDb, db) {
			t.Fatalf("split %v: the team after a call alone differs from its first figures", split)
		}
	}
}

// TestOutputTeamAbort has one member of a team of two call OutputXent while the other never comes, and requires
// Abort to release it with a NaN loss.
func TestOutputTeamAbort(t *testing.T) {
	skipWithoutBF16Products(t, false)
	c := newXentAMXCase(rand.New(rand.NewPCG(33, 34)))
	outs, err := NewAMXOutputs(2, false)
	if err != nil {
		t.Fatal(err)
	}
	team := outs[0].Team()
	team.Begin(outs)
	defer team.End()
	done := make(chan float64)
	go func() {
		loss, _, _, _ := c.run(outs[0])
		done <- loss
	}()
	select {
	case loss := <-done:
		t.Fatalf("a member's call returned %g without the other member", loss)
	case <-time.After(50 * time.Millisecond):
	}
	team.Abort()
	if loss := <-done; !math.IsNaN(loss) {
		t.Fatalf("an aborted call returned %g, want NaN", loss)
	}
}
