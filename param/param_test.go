package param

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPackKeepsValuesAndIdentity packs a set: each tensor keeps its pointer and values, its data becomes a view
// of Flat in order, and writes through either side are seen by the other.
func TestPackKeepsValuesAndIdentity(t *testing.T) {
	s := NewSet[float32]()
	a := s.Add("a", 2, 3)
	b := s.Add("b", 4)
	for i := range a.Data {
		a.Data[i] = float32(i + 1)
	}
	b.Data[3] = 42
	s.Pack()
	if s.Get("a") != a || s.Get("b") != b {
		t.Fatal("packing replaced the tensors")
	}
	flat := s.Flat()
	want := []float32{1, 2, 3, 4, 5, 6, 0, 0, 0, 42}
	if len(flat) != len(want) {
		t.Fatalf("Flat has %d values, want %d", len(flat), len(want))
	}
	for i := range want {
		if flat[i] != want[i] {
			t.Fatalf("Flat()[%d] = %g, want %g", i, flat[i], want[i])
		}
	}
	flat[6] = 7
	a.Data[0] = -1
	if b.Data[0] != 7 || flat[0] != -1 {
		t.Fatal("Flat and the tensors do not share memory")
	}
	if cap(a.Data) != len(a.Data) {
		t.Fatal("a tensor's view can grow into its neighbour")
	}
	s.Zero()
	if b.Data[3] != 0 || a.Data[5] != 0 {
		t.Fatal("Zero left values in a packed set")
	}
}

// TestZerosLikeIsPackedInTheSameOrder checks the layout that lets Adam walk weights, gradients and moments with
// one index.
func TestZerosLikeIsPackedInTheSameOrder(t *testing.T) {
	s := NewSet[float64]()
	s.Add("x", 3)
	s.Add("y", 2, 2)
	z := s.ZerosLike()
	z.Get("y").Data[0] = 5
	if got := z.Flat()[3]; got != 5 {
		t.Fatalf("ZerosLike's y starts at %g, want it at index 3", got)
	}
	for i, tz := range z.List() {
		if tz.Name != s.List()[i].Name || len(tz.Data) != len(s.List()[i].Data) {
			t.Fatalf("tensor %d: %s/%d, want %s/%d", i, tz.Name, len(tz.Data), s.List()[i].Name, len(s.List()[i].Data))
		}
	}
}

// TestShapeSetAllocatesNothing checks the set Load uses to learn a config's shapes.
func TestShapeSetAllocatesNothing(t *testing.T) {
	s := NewShapeSet[float32]()
	huge := s.Add("huge", 1<<20, 1<<20)
	if huge.Data != nil || huge.Shape[0] != 1<<20 || s.Len() != 0 {
		t.Fatalf("shape-only tensor: %d values, shape %v", len(huge.Data), huge.Shape)
	}
}

// TestUniformSumHasTwiceUniformsVariance: the sum of two uniform draws on ±b has variance 2b²/3 and stays
// within ±2b, with values beyond ±b (which one draw never gives).
func TestUniformSumHasTwiceUniformsVariance(t *testing.T) {
	const bound, n = 0.5, 200000
	set := NewSet[float64]()
	x := set.Add("x", n)
	UniformSum(x, bound, rand.New(rand.NewPCG(1, 2)))
	var sum, sq float64
	beyond := 0
	for _, v := range x.Data {
		if math.Abs(v) >= 2*bound {
			t.Fatalf("%v outside ±%v", v, 2*bound)
		}
		if math.Abs(v) > bound {
			beyond++
		}
		sum += v
		sq += v * v
	}
	mean := sum / n
	variance := sq/n - mean*mean
	if want := 2 * bound * bound / 3; math.Abs(variance-want) > 0.02*want || math.Abs(mean) > 0.005 {
		t.Fatalf("mean %v variance %v, want 0 and %v", mean, variance, want)
	}
	if beyond == 0 {
		t.Fatal("no value beyond ±bound: not a sum of two draws")
	}
}
