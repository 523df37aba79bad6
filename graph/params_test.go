package graph

import (
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
	vm := G.NewTapeMachine(p.Graph)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	grads := set.ZerosLike()
	p.AddGrads(grads, 1)
	for i, g := range grads.Get("w").Data {
		want := 2.0
		if i >= 3 {
			want = 3
		}
		if g != want {
			t.Fatalf("gradient of w[%d] = %g, want %g", i, g, want)
		}
	}
}
