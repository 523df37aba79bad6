package graph

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// TestViewTwiceCountsGradientOnce builds loss = Σ (w + w) + Σ w[3:] from two requests for the same view of w
// and one of its second half: the gradients are 2 and 3, which a second binding of the same (merged) node would
// double.
func TestViewTwiceCountsGradientOnce(t *testing.T) {
	set := param.NewSet[float64]()
	w := set.Add("w", 2, 3)
	for i := range w.Data {
		w.Data[i] = float64(i)
	}
	p := NewParams[float64](nil)
	a, b := p.View(w, 0, 2, 3), p.Whole(w)
	if a != b {
		t.Fatalf("two views of the same block gave different nodes %v and %v", a, b)
	}
	c := p.View(w, 3, 3)
	if c == a {
		t.Fatal("a view of another block returned the first view")
	}
	loss := G.Must(G.Add(G.Must(G.Sum(G.Must(G.Add(a, b)))), G.Must(G.Sum(c))))
	if err := p.Differentiate(loss); err != nil {
		t.Fatal(err)
	}
	for i, g := range runGrads(t, p, set).Get("w").Data {
		want := 2.0
		if i >= 3 {
			want = 3
		}
		if g != want {
			t.Fatalf("gradient of w[%d] = %g, want %g", i, g, want)
		}
	}
}

// collidingNames returns two names whose input nodes of the given shape have the same 32-bit gorgonia hash,
// found by trying names drawn from a fixed seed (the birthday bound: about 10⁵ tries; names that differ only in a
// short suffix rarely collide under FNV, hence random ones).
func collidingNames(t *testing.T, shape ...int) (string, string) {
	g := G.NewGraph()
	seen := map[uint32]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1<<20; i++ {
		name := fmt.Sprintf("x%016x", rng.Uint64())
		n := G.NewTensor(g, G.Float64, len(shape), G.WithShape(shape...), G.WithName(name))
		if other, ok := seen[n.Hashcode()]; ok {
			return other, name
		}
		seen[n.Hashcode()] = name
	}
	t.Fatal("no two names collide")
	return "", ""
}

// TestDifferentiateRefusesCollidingHashes builds a graph over two inputs whose node hashes collide, which
// gorgonia's compiler would merge (the second computed as the first), and requires ErrHashCollision; with a salt
// the same graph has other hashes and compiles, and its gradient is right.
func TestDifferentiateRefusesCollidingHashes(t *testing.T) {
	a, b := collidingNames(t, 2)
	set := param.NewSet[float64]()
	w := set.Add("w", 2)
	build := func(salt int) (*Params[float64], error) {
		p := NewParams[float64](nil)
		p.Salt = salt
		x, y := p.Input(a, []float64{1, 2}, 2), p.Input(b, []float64{3, 4}, 2)
		loss := G.Must(G.Sum(G.Must(G.HadamardProd(p.Whole(w), G.Must(G.Sub(x, y))))))
		return p, p.Differentiate(loss)
	}
	if _, err := build(0); !errors.Is(err, ErrHashCollision) {
		t.Fatalf("inputs %q and %q with one hash: Differentiate gave %v, want ErrHashCollision", a, b, err)
	}
	p, err := build(1)
	if err != nil {
		t.Fatal(err)
	}
	if got := runGrads(t, p, set).Get("w").Data; got[0] != -2 || got[1] != -2 {
		t.Fatalf("gradient of w with salt 1: %v, want x − y = [-2 -2]", got)
	}
}

// runGrads runs p's graph once and returns the gradients of the parameters, shaped like set.
func runGrads(t *testing.T, p *Params[float64], set *param.Set[float64]) *param.Set[float64] {
	t.Helper()
	vm := G.NewTapeMachine(p.Graph)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	grads := set.ZerosLike()
	p.AddGrads(grads, 1)
	return grads
}
