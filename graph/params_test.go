package graph

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/attend-nmt/attend/kernels"
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
	SumGrads(grads, 1, []*Params[float64]{p}, 1<<15, nil)
	return grads
}

// addGrads adds scale × the gradients of p's last run into grads, binding by binding in order: the reduction
// that SumGrads must reproduce bit for bit.
func addGrads[T kernels.Float](p *Params[T], grads *param.Set[T], scale T) {
	for i, b := range p.bindings {
		dst := grads.Get(b.tensor.Name).Data[b.offset:]
		for j, g := range p.grads[i].Value().Data().([]T) {
			dst[j] += scale * g
		}
	}
}

// TestSumGradsAddsAsOneGraphAfterAnother runs two float32 graphs over the same parameters, each with views that
// overlap (so some values receive several additions) and one tensor left unbound, and requires SumGrads to leave
// exactly (bit for bit) what zeroing and adding the graphs' gradients one after the other leaves, whatever the
// block size, with done called once per block with its final values. Adding the graphs in the other order must
// differ somewhere, or the test could not tell.
func TestSumGradsAddsAsOneGraphAfterAnother(t *testing.T) {
	set := param.NewSet[float32]()
	a, b := set.Add("a", 5, 7), set.Add("b", 13)
	set.Add("unbound", 4)
	c := set.Add("c", 3)
	set.Pack()
	rng := rand.New(rand.NewPCG(3, 4))
	build := func() *Params[float32] {
		p := NewParams[float32](nil)
		var loss *G.Node
		for i, v := range []*G.Node{p.Whole(a), p.View(a, 10, 15), p.View(a, 12, 3, 4), p.Whole(b), p.Whole(c)} {
			coef := make([]float32, v.Shape().TotalSize())
			for j := range coef { // magnitudes over six decades, so that the order of additions shows in the sums
				coef[j] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(6)-3)))
			}
			term := G.Must(G.Sum(G.Must(G.HadamardProd(v, p.Input(fmt.Sprintf("coef%d", i), coef, v.Shape()...)))))
			if loss == nil {
				loss = term
			} else {
				loss = G.Must(G.Add(loss, term))
			}
		}
		if err := p.Differentiate(loss); err != nil {
			t.Fatal(err)
		}
		vm := G.NewTapeMachine(p.Graph)
		t.Cleanup(func() { vm.Close() })
		if err := vm.RunAll(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p1, p2 := build(), build()
	const scale = 0.37
	want := set.ZerosLike()
	addGrads(p1, want, scale)
	addGrads(p2, want, scale)
	reversed := set.ZerosLike()
	addGrads(p2, reversed, scale)
	addGrads(p1, reversed, scale)
	differs := false
	for i, v := range reversed.Flat() {
		differs = differs || v != want.Flat()[i]
	}
	if !differs {
		t.Fatal("the two orders of addition agree: the test cannot tell them apart")
	}
	for _, block := range []int{1, 4, 7, 64, 1 << 15} {
		got := set.ZerosLike()
		for i := range got.Flat() {
			got.Flat()[i] = float32(math.NaN()) // what was there before must not show
		}
		seen := make([][]float32, (len(got.Flat())+block-1)/block)
		var mu sync.Mutex
		SumGrads(got, scale, []*Params[float32]{p1, p2}, block, func(k int, values []float32) {
			mu.Lock()
			defer mu.Unlock()
			if seen[k] != nil {
				t.Errorf("block size %d: block %d done twice", block, k)
			}
			seen[k] = append([]float32{}, values...)
		})
		for i, v := range got.Flat() {
			if math.Float32bits(v) != math.Float32bits(want.Flat()[i]) {
				t.Fatalf("block size %d: value %d is %g, want %g", block, i, v, want.Flat()[i])
			}
			if k := i / block; seen[k] == nil || math.Float32bits(seen[k][i%block]) != math.Float32bits(v) {
				t.Fatalf("block size %d: done saw block %d without value %d's final %g", block, k, i, v)
			}
		}
	}
}
