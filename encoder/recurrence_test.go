package encoder

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// Tolerances of the recurrent directions' tests.
const (
	forwardTol64 = 1e-12 // float64 against the reference: summation order only
	forwardTol32 = 5e-5  // float32 against the float64 reference at H=512
	gradTol      = 1e-5  // relative gap to float64 central differences
	autodiffTol  = 1e-10 // against gorgonia's gradient of the same expression, float64
)

// recRef is the plain reference of recurrence.forward: every gate of every row written out with loops, rows
// past their length keeping their state.
func recRef(cell Cell, x []float64, w dirWeights[float64], lengths []int, steps, rows, in, hid int, reverse bool) (out, finalH, finalC []float64) {
	sigmoid := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	gates := cell.Gates()
	h, c := make([]float64, rows*hid), make([]float64, rows*hid)
	out = make([]float64, steps*rows*hid)
	for k := 0; k < steps; k++ {
		t := k
		if reverse {
			t = steps - 1 - k
		}
		for r := 0; r < rows; r++ {
			if t < lengths[r] {
				// xPart[g][j] = b + x W_ih (GRU: b_ih + x W_ih); hPart[g][j] = h W_hh (GRU: + b_hh)
				xPart, hPart := make([][]float64, gates), make([][]float64, gates)
				for g := 0; g < gates; g++ {
					xPart[g], hPart[g] = make([]float64, hid), make([]float64, hid)
					for j := 0; j < hid; j++ {
						xPart[g][j] = w.bias[g*hid+j]
						for i := 0; i < in; i++ {
							xPart[g][j] += x[(t*rows+r)*in+i] * w.inputW[(g*in+i)*hid+j]
						}
						if cell == GRU {
							hPart[g][j] = w.hiddenBias[g*hid+j]
						}
						for i := 0; i < hid; i++ {
							hPart[g][j] += h[r*hid+i] * w.hiddenW[(g*hid+i)*hid+j]
						}
					}
				}
				for j := 0; j < hid; j++ {
					if cell == GRU {
						rg := sigmoid(xPart[0][j] + hPart[0][j])
						zg := sigmoid(xPart[1][j] + hPart[1][j])
						ng := math.Tanh(xPart[2][j] + rg*hPart[2][j])
						h[r*hid+j] = (1-zg)*ng + zg*h[r*hid+j]
						c[r*hid+j] = h[r*hid+j]
						continue
					}
					pre := func(g int) float64 { return xPart[g][j] + hPart[g][j] }
					c[r*hid+j] = sigmoid(pre(1))*c[r*hid+j] + sigmoid(pre(0))*math.Tanh(pre(2))
					h[r*hid+j] = sigmoid(pre(3)) * math.Tanh(c[r*hid+j])
				}
			}
			copy(out[(t*rows+r)*hid:(t*rows+r+1)*hid], h[r*hid:(r+1)*hid])
		}
	}
	return out, h, c
}

type recCase struct {
	cell                 Cell
	steps, rows, in, hid int
	lengths              []int
}

func (c recCase) String() string {
	return fmt.Sprintf("%s S=%d B=%d I=%d H=%d", c.cell, c.steps, c.rows, c.in, c.hid)
}

func (c recCase) inputs(rng *rand.Rand) (x []float64, w dirWeights[float64]) {
	g, scale := c.cell.Gates(), 1/math.Sqrt(float64(c.hid))
	w = dirWeights[float64]{inputW: gradcheck.Random(rng, g*c.in*c.hid, scale), hiddenW: gradcheck.Random(rng, g*c.hid*c.hid, scale),
		bias: gradcheck.Random(rng, g*c.hid, scale)}
	if c.cell == GRU {
		w.hiddenBias = gradcheck.Random(rng, g*c.hid, scale)
	}
	return gradcheck.Random(rng, c.steps*c.rows*c.in, 1), w
}

func convert[T kernels.Float](x []float64) []T {
	if x == nil {
		return nil
	}
	out := make([]T, len(x))
	for i, v := range x {
		out[i] = T(v)
	}
	return out
}

func widen(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// runRec runs the forward pass in T, with a cache (training) or without (inference).
func runRec[T kernels.Float](c recCase, reverse, keep bool, x []float64, w dirWeights[float64]) (out, finalH, finalC []T) {
	rec := newRecurrence[T](c.cell, c.steps, c.rows, c.in, c.hid, reverse, kernels.NewArena[T](), nil, "t")
	var cache *recCache[T]
	if keep {
		cache = rec.newCache()
	}
	wt := dirWeights[T]{inputW: convert[T](w.inputW), hiddenW: convert[T](w.hiddenW), bias: convert[T](w.bias), hiddenBias: convert[T](w.hiddenBias)}
	out, finalH, finalC = make([]T, c.steps*c.rows*c.hid), make([]T, c.rows*c.hid), make([]T, c.rows*c.hid)
	rec.forward(wt, convert[T](x), c.lengths, out, finalH, finalC, cache)
	return out, finalH, finalC
}

func recCases() []recCase {
	var cases []recCase
	for _, cell := range []Cell{LSTM, GRU} {
		cases = append(cases, recCase{cell, 5, 3, 4, 7, []int{5, 0, 3}}, recCase{cell, 3, 2, 3, 512, []int{3, 2}})
	}
	return cases
}

func TestRecurrenceForwardMatchesReference(t *testing.T) {
	for _, c := range recCases() {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v reverse=%v", c, reverse), func(t *testing.T) {
				x, w := c.inputs(rand.New(rand.NewPCG(1, uint64(c.hid))))
				out, finalH, finalC := recRef(c.cell, x, w, c.lengths, c.steps, c.rows, c.in, c.hid, reverse)
				for _, keep := range []bool{false, true} {
					o64, h64, c64 := runRec[float64](c, reverse, keep, x, w)
					gradcheck.Close(t, "out (float64)", o64, out, forwardTol64)
					gradcheck.Close(t, "finalH (float64)", h64, finalH, forwardTol64)
					gradcheck.Close(t, "finalC (float64)", c64, finalC, forwardTol64)
				}
				o32, h32, c32 := runRec[float32](c, reverse, false, x, w)
				gradcheck.Close(t, "out (float32)", widen(o32), out, forwardTol32)
				gradcheck.Close(t, "finalH (float32)", widen(h32), finalH, forwardTol32)
				gradcheck.Close(t, "finalC (float32)", widen(c32), finalC, forwardTol32)
			})
		}
	}
}

// recLoss is Σ R ⊙ states + Σ R_h ⊙ finalH + Σ R_c ⊙ finalC of one direction, with its gradient by backward.
type recLoss struct {
	c                   recCase
	reverse             bool
	x                   []float64
	w                   dirWeights[float64]
	rOut, rH, rC        []float64
	rec                 *recurrence[float64]
	out, finalH, finalC []float64
}

func newRecLoss(c recCase, reverse bool, rng *rand.Rand) *recLoss {
	l := &recLoss{c: c, reverse: reverse}
	l.x, l.w = c.inputs(rng)
	n := c.steps * c.rows * c.hid
	l.rOut, l.rH, l.rC = gradcheck.Random(rng, n, 1), gradcheck.Random(rng, c.rows*c.hid, 1), gradcheck.Random(rng, c.rows*c.hid, 1)
	l.rec = newRecurrence[float64](c.cell, c.steps, c.rows, c.in, c.hid, reverse, kernels.NewArena[float64](), nil, "t")
	l.out, l.finalH, l.finalC = make([]float64, n), make([]float64, c.rows*c.hid), make([]float64, c.rows*c.hid)
	return l
}

func (l *recLoss) value(cache *recCache[float64]) float64 {
	l.rec.forward(l.w, l.x, l.c.lengths, l.out, l.finalH, l.finalC, cache)
	return gradcheck.Dot(l.out, l.rOut) + gradcheck.Dot(l.finalH, l.rH) + gradcheck.Dot(l.finalC, l.rC)
}

// grads runs forward and backward and returns dx and the weight gradients.
func (l *recLoss) grads() (dx []float64, dw dirWeights[float64]) {
	cache := l.rec.newCache()
	l.value(cache)
	dx = make([]float64, len(l.x))
	dw = dirWeights[float64]{inputW: make([]float64, len(l.w.inputW)), hiddenW: make([]float64, len(l.w.hiddenW)), bias: make([]float64, len(l.w.bias))}
	if l.w.hiddenBias != nil {
		dw.hiddenBias = make([]float64, len(l.w.hiddenBias))
	}
	l.rec.backward(l.w, l.x, l.c.lengths, cache, l.rOut, l.rH, l.rC, dx, dw)
	return dx, dw
}

func (l *recLoss) tensors(dx []float64, dw dirWeights[float64]) []gradcheck.Tensor {
	ts := []gradcheck.Tensor{{Name: "x", X: l.x, Grad: dx}, {Name: "w_ih", X: l.w.inputW, Grad: dw.inputW},
		{Name: "w_hh", X: l.w.hiddenW, Grad: dw.hiddenW}, {Name: "b", X: l.w.bias, Grad: dw.bias}}
	if l.w.hiddenBias != nil {
		ts = append(ts, gradcheck.Tensor{Name: "b_hh", X: l.w.hiddenBias, Grad: dw.hiddenBias})
	}
	return ts
}

func TestRecurrenceBackwardMatchesFiniteDifferences(t *testing.T) {
	for _, c := range recCases() {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v reverse=%v", c, reverse), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(2, 3))
				l := newRecLoss(c, reverse, rng)
				dx, dw := l.grads()
				gradcheck.Check(t, func() float64 { return l.value(nil) }, l.tensors(dx, dw), 30, rng, gradTol)
			})
		}
	}
}

// TestRecurrenceMatchesGraph builds one direction from gorgonia's ops (Encoder.Graph's unfused step and masked
// update, the autodiff reference) and requires its states and gorgonia's gradients of the same loss to be
// the recurrence's.
func TestRecurrenceMatchesGraph(t *testing.T) {
	for _, c := range recCases() {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v reverse=%v", c, reverse), func(t *testing.T) {
				l := newRecLoss(c, reverse, rand.New(rand.NewPCG(4, 5)))
				set := param.NewSet[float64]()
				e := &Encoder[float64]{Cfg: Config{Hidden: c.hid, Cell: c.cell}}
				d := newDirection(set, "d", e.Cfg, c.in)
				set.Pack()
				copy(d.InputW.Data, l.w.inputW)
				copy(d.HiddenW.Data, l.w.hiddenW)
				copy(d.Bias.Data, l.w.bias)
				if d.HiddenBias != nil {
					copy(d.HiddenBias.Data, l.w.hiddenBias)
				}
				p := graph.NewParams[float64](nil)
				xs := p.Input("x", l.x, c.steps, c.rows, c.in)
				lengths := c.lengths
				cell := e.bindCell(p, d, c.in)
				h := p.Zeros("h0", c.rows, c.hid)
				cst := h
				states := make([]*G.Node, c.steps)
				for k := 0; k < c.steps; k++ {
					t := k
					if reverse {
						t = c.steps - 1 - k
					}
					hNew, cNew := cell.step(graph.Select[float64](xs, t), h, cst)
					h = graph.MaskedUpdate[float64](h, hNew, &lengths, t)
					if c.cell == LSTM {
						cst = graph.MaskedUpdate[float64](cst, cNew, &lengths, t)
					} else {
						cst = h
					}
					states[t] = h
				}
				dot := func(a *G.Node, r []float64, shape ...int) *G.Node {
					return G.Must(G.Sum(G.Must(G.HadamardProd(a, p.Input(fmt.Sprintf("r%d", len(r)), r, shape...)))))
				}
				stacked := graph.Stack[float64](states, false)
				loss := G.Must(G.Add(G.Must(G.Add(dot(stacked, l.rOut, c.steps*c.rows, c.hid), dot(h, l.rH, c.rows, c.hid))),
					G.Must(G.Sum(G.Must(G.HadamardProd(cst, p.Input("rc", l.rC, c.rows, c.hid)))))))
				if err := p.Differentiate(loss); err != nil {
					t.Fatal(err)
				}
				vm := G.NewTapeMachine(p.Graph)
				defer vm.Close()
				if err := vm.RunAll(); err != nil {
					t.Fatal(err)
				}
				auto := set.ZerosLike()
				graph.SumGrads(auto, 1, []*graph.Params[float64]{p}, 1<<15, nil)
				_, dw := l.grads()
				gradcheck.Close(t, "loss", []float64{loss.Value().Data().(float64)}, []float64{l.value(nil)}, autodiffTol)
				gradcheck.Close(t, "w_ih", dw.inputW, auto.Get("d.w_ih").Data, autodiffTol)
				gradcheck.Close(t, "w_hh", dw.hiddenW, auto.Get("d.w_hh").Data, autodiffTol)
				gradcheck.Close(t, "b", dw.bias, auto.Get(d.Bias.Name).Data, autodiffTol)
				if d.HiddenBias != nil {
					gradcheck.Close(t, "b_hh", dw.hiddenBias, auto.Get("d.b_hh").Data, autodiffTol)
				}
			})
		}
	}
}

// TestRecurrenceWeightGradientsInBF16x3 runs a direction forward and backward in float32 on an arena whose AMX
// products are split (bfloat16x3: the weight gradients on kernels.AMXProduct) and on a plain one, LSTM and GRU
// (whose hidden weights' gradient multiplies dGh, a right operand of its own), against float64: the AMX run's
// gradients must be within 1e-4 of the largest float64 value (each term off by a relative 3·2^-17 at most) and
// its weight gradients differ from the float32 run's (the products did run on AMX).
func TestRecurrenceWeightGradientsInBF16x3(t *testing.T) {
	if _, err := kernels.Choose(kernels.PrecisionBF16x3); err != nil {
		t.Skip(err)
	}
	for _, cell := range []Cell{LSTM, GRU} {
		c := recCase{cell, 6, 9, 40, 36, []int{6, 1, 3, 5, 6, 2, 4, 6, 0}}
		t.Run(c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			l := newRecLoss(c, true, rng)
			wantDx, wantDw := l.grads()
			run := func(split bool) (dx []float32, dw dirWeights[float32]) {
				var mul *kernels.Multiplier
				if split {
					products, err := kernels.Choose(kernels.PrecisionBF16x3)
					if err != nil {
						t.Fatal(err)
					}
					muls, err := kernels.NewMultipliers(products, 1)
					if err != nil {
						t.Fatal(err)
					}
					mul = muls[0]
				}
				rec := newRecurrence[float32](c.cell, c.steps, c.rows, c.in, c.hid, true, kernels.NewArena[float32](), mul, "t")
				cache := rec.newCache()
				w := dirWeights[float32]{inputW: convert[float32](l.w.inputW), hiddenW: convert[float32](l.w.hiddenW),
					bias: convert[float32](l.w.bias), hiddenBias: convert[float32](l.w.hiddenBias)}
				x := convert[float32](l.x)
				n := c.steps * c.rows * c.hid
				rec.forward(w, x, c.lengths, make([]float32, n), make([]float32, c.rows*c.hid), make([]float32, c.rows*c.hid), cache)
				dx = make([]float32, len(x))
				dw = dirWeights[float32]{inputW: make([]float32, len(w.inputW)), hiddenW: make([]float32, len(w.hiddenW)),
					bias: make([]float32, len(w.bias))}
				if w.hiddenBias != nil {
					dw.hiddenBias = make([]float32, len(w.hiddenBias))
				}
				rec.backward(w, x, c.lengths, cache, convert[float32](l.rOut), convert[float32](l.rH), convert[float32](l.rC), dx, dw)
				return dx, dw
			}
			_, f32 := run(false)
			dx, dw := run(true)
			for _, g := range []struct {
				name     string
				got, f32 []float32
				want     []float64
				fromAMX  bool
			}{{"dx", dx, nil, wantDx, false}, {"w_ih", dw.inputW, f32.inputW, wantDw.inputW, true},
				{"w_hh", dw.hiddenW, f32.hiddenW, wantDw.hiddenW, true}, {"b", dw.bias, f32.bias, wantDw.bias, false}} {
				var scale, err float64
				for j, w := range g.want {
					scale = max(scale, math.Abs(w))
					err = max(err, math.Abs(float64(g.got[j])-w))
				}
				if err > 1e-4*scale {
					t.Errorf("%s: bfloat16x3 off float64 by %.3g of the largest value, %.3g", g.name, err/scale, scale)
				}
				if g.fromAMX && slices.Equal(g.got, g.f32) {
					t.Errorf("%s: the AMX run gave float32's gradient: did its product run on AMX?", g.name)
				}
			}
		})
	}
}
