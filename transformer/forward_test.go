package transformer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/internal/gradcheck"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// Tolerances of the forward tests, against a float64 reference (values scaled by max(1, |reference|)).
const (
	forwardTol64 = 1e-9 // summation order only
	forwardTol32 = 5e-5 // float32 through 3 blocks each side and a 256-wide output layer
)

// reference is the Transformer written out with plain loops over float64 weights, one sentence at a time: the
// package comment's equations and nothing else.
type reference struct {
	cfg Config
	w   func(name string) []float64
}

func newReference[T kernels.Float](cfg Config, set *param.Set[T]) reference {
	widened := map[string][]float64{}
	for _, p := range set.List() {
		widened[p.Name] = widen(p.Data)
	}
	return reference{cfg: cfg, w: func(name string) []float64 { return widened[name] }}
}

func (r reference) layerNorm(x []float64, name string) []float64 {
	g, b := r.w(name+"_g"), r.w(name+"_b")
	var mean, variance float64
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (v - mean) * (v - mean)
	}
	variance /= float64(len(x))
	out := make([]float64, len(x))
	for u, v := range x {
		out[u] = (v-mean)/math.Sqrt(variance+1e-5)*g[u] + b[u]
	}
	return out
}

// linear is x W + b for W (len(x), out) named wName.
func (r reference) linear(x []float64, wName, bName string) []float64 {
	w, b := r.w(wName), r.w(bName)
	out := append([]float64(nil), b...)
	for i, v := range x {
		for o, wo := range w[i*len(b) : (i+1)*len(b)] {
			out[o] += v * wo
		}
	}
	return out
}

// attention is multi-head attention of the queries from xs over the keys and values from ms, the first keys of
// them only (causal: query i sees keys 0…i). It returns the outputs and the weights [head][query][key].
func (r reference) attention(xs, ms [][]float64, keys int, causal bool, name string) ([][]float64, [][][]float64) {
	d, nh := r.cfg.Dim, r.cfg.Heads
	hd := d / nh
	var ks, vs [][]float64
	for _, m := range ms[:keys] {
		ks = append(ks, r.linear(m, name+".w_k", name+".b_k"))
		vs = append(vs, r.linear(m, name+".w_v", name+".b_v"))
	}
	att := make([][][]float64, nh)
	var outs [][]float64
	for i, x := range xs {
		q := r.linear(x, name+".w_q", name+".b_q")
		ctx := make([]float64, d)
		seen := keys
		if causal {
			seen = min(keys, i+1)
		}
		for j := 0; j < nh; j++ {
			scores := make([]float64, len(ms))
			top := math.Inf(-1)
			for k := 0; k < seen; k++ {
				for c := j * hd; c < (j+1)*hd; c++ {
					scores[k] += q[c] * ks[k][c]
				}
				scores[k] /= math.Sqrt(float64(hd))
				top = math.Max(top, scores[k])
			}
			var sum float64
			for k := 0; k < seen; k++ {
				scores[k] = math.Exp(scores[k] - top)
				sum += scores[k]
			}
			for k := 0; k < seen; k++ {
				scores[k] /= sum
				for c := j * hd; c < (j+1)*hd; c++ {
					ctx[c] += scores[k] * vs[k][c]
				}
			}
			att[j] = append(att[j], scores)
		}
		outs = append(outs, r.linear(ctx, name+".w_o", name+".b_o"))
	}
	return outs, att
}

func (r reference) ffn(x []float64, name string) []float64 {
	h := r.linear(x, name+".w_1", name+".b_1")
	for i := range h {
		h[i] = math.Max(h[i], 0)
	}
	return r.linear(h, name+".w_2", name+".b_2")
}

// embed is √D · E[w] + P for the ids of one sentence.
func (r reference) embed(ids []int, table, positions string) [][]float64 {
	d := r.cfg.Dim
	e := r.w(table)
	var out [][]float64
	for i, id := range ids {
		x := make([]float64, d)
		for u := range x {
			var p float64
			if r.cfg.Positions == Learned {
				p = r.w(positions)[min(i, r.cfg.MaxPositions-1)*d+u]
			} else {
				angle := float64(i) / math.Pow(10000, float64(u-u%2)/float64(d))
				p = math.Sin(angle)
				if u%2 == 1 {
					p = math.Cos(angle)
				}
			}
			x[u] = math.Sqrt(float64(d))*e[id*d+u] + p
		}
		out = append(out, x)
	}
	return out
}

func add(x, y []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] + y[i]
	}
	return out
}

// encode is the memory of one sentence's real words.
func (r reference) encode(ids []int) [][]float64 {
	x := r.embed(ids, "tf.src_emb", "tf.src_pos")
	for l := 0; l < r.cfg.Layers; l++ {
		pre := fmt.Sprintf("tf.enc.%d.", l)
		var h [][]float64
		for _, v := range x {
			h = append(h, r.layerNorm(v, pre+"ln1"))
		}
		a, _ := r.attention(h, h, len(h), false, pre+"self")
		for i := range x {
			x[i] = add(x[i], a[i])
			x[i] = add(x[i], r.ffn(r.layerNorm(x[i], pre+"ln2"), pre+"ff"))
		}
	}
	for i := range x {
		x[i] = r.layerNorm(x[i], "tf.enc.ln")
	}
	return x
}

// decode is the logits of one sentence's target positions by teacher forcing over mem, and its cross-attention
// weights [block][head][position][key].
func (r reference) decode(ids []int, mem [][]float64) ([][]float64, [][][][]float64) {
	d, v := r.cfg.Dim, r.cfg.TgtVocab
	y := r.embed(ids, "tf.tgt_emb", "tf.tgt_pos")
	var cross [][][][]float64
	for l := 0; l < r.cfg.Layers; l++ {
		pre := fmt.Sprintf("tf.dec.%d.", l)
		var h [][]float64
		for _, v := range y {
			h = append(h, r.layerNorm(v, pre+"ln1"))
		}
		a, _ := r.attention(h, h, len(h), true, pre+"self")
		h = h[:0]
		for i := range y {
			y[i] = add(y[i], a[i])
			h = append(h, r.layerNorm(y[i], pre+"ln2"))
		}
		c, att := r.attention(h, mem, len(mem), false, pre+"cross")
		cross = append(cross, att)
		for i := range y {
			y[i] = add(y[i], c[i])
			y[i] = add(y[i], r.ffn(r.layerNorm(y[i], pre+"ln3"), pre+"ff"))
		}
	}
	var logits [][]float64
	for _, x := range y {
		out := r.layerNorm(x, "tf.dec.ln")
		if !r.cfg.TieOutput {
			logits = append(logits, r.linear(out, "tf.out_w", "tf.out_b"))
			continue
		}
		e, b := r.w("tf.tgt_emb"), r.w("tf.out_b")
		z := make([]float64, v)
		for k := range z {
			z[k] = b[k]
			for u := 0; u < d; u++ {
				z[k] += out[u] * e[k*d+u]
			}
		}
		logits = append(logits, z)
	}
	return logits, cross
}

// forwardCase is the forward tests' model and batch: the small config's sizes.
func forwardCase(positions string, tied bool) (Config, testBatch) {
	cfg := Config{SrcVocab: 300, TgtVocab: 400, Dim: 256, Heads: 4, FF: 1024, Layers: 3, Positions: positions, MaxPositions: 16, TieOutput: tied}
	b := newTestBatch(rand.New(rand.NewPCG(4, 4)), cfg, []int{20, 17, 12, 20, 5, 9, 1, 14}, []int{22, 15, 13, 20, 6, 11, 2, 18}, 20, 22)
	return cfg, b
}

// checkAgainstReference compares Encode and Force with the reference over every row of b.
func checkAgainstReference[T kernels.Float](t *testing.T, cfg Config, b testBatch, tol float64) {
	m, set := newTestModel[T](t, cfg, 9)
	ref := newReference(cfg, set)
	mem := m.Encode(b.src, b.srcLengths, b.rows, b.srcLen)
	f := m.Force(mem, b.tgtIn, b.tgtLen)
	finite(t, "logits", f.Logits)
	if len(f.Cross) != cfg.Layers*cfg.Heads {
		t.Fatalf("%d cross-attention maps, want %d", len(f.Cross), cfg.Layers*cfg.Heads)
	}
	d, v, s := cfg.Dim, cfg.TgtVocab, b.srcLen
	for r := 0; r < b.rows; r++ {
		L := b.srcLengths[r]
		ids := make([]int, L)
		for i := range ids {
			ids[i] = b.src[i*b.rows+r]
		}
		wantMem := ref.encode(ids)
		for i := 0; i < s; i++ {
			got := mem.States[(r*s+i)*d : (r*s+i+1)*d]
			want := make([]float64, d) // padded positions: 0
			if i < L {
				want = wantMem[i]
			}
			gradcheck.Close(t, fmt.Sprintf("memory row %d position %d", r, i), widen(got), want, tol)
		}
		tgt := make([]int, b.tgtLen)
		for i := range tgt {
			tgt[i] = b.tgtIn[i*b.rows+r]
		}
		logits, cross := ref.decode(tgt, wantMem)
		for i := 0; i < b.tgtLen; i++ {
			at := i*b.rows + r
			gradcheck.Close(t, fmt.Sprintf("logits row %d position %d", r, i), widen(f.Logits[at*v:(at+1)*v]), logits[i], tol)
			for l := 0; l < cfg.Layers; l++ {
				for j := 0; j < cfg.Heads; j++ {
					want := append(cross[l][j][i][:L:L], make([]float64, s-L)...)
					gradcheck.Close(t, fmt.Sprintf("cross weights block %d head %d row %d position %d", l, j, r, i),
						widen(f.Cross[l*cfg.Heads+j][at*s:(at+1)*s]), want, tol)
				}
			}
		}
	}
}

func TestForwardMatchesReference(t *testing.T) {
	for _, c := range []struct {
		positions string
		tied      bool
	}{{Sinusoidal, false}, {Learned, true}} {
		cfg, b := forwardCase(c.positions, c.tied)
		t.Run(fmt.Sprintf("%s tied=%v float64", c.positions, c.tied), func(t *testing.T) { checkAgainstReference[float64](t, cfg, b, forwardTol64) })
		t.Run(fmt.Sprintf("%s tied=%v float32", c.positions, c.tied), func(t *testing.T) { checkAgainstReference[float32](t, cfg, b, forwardTol32) })
	}
}

func TestGraphLossIsForcedLoss(t *testing.T) {
	for _, tied := range []bool{false, true} {
		t.Run(fmt.Sprintf("tied=%v", tied), func(t *testing.T) {
			cfg, b := forwardCase(Sinusoidal, tied)
			m, _ := newTestModel[float32](t, cfg, 9)
			const smoothing = 0.1
			g := newGraphRun(t, m, b, nil, nil, smoothing)
			got := g.run(t, nil)
			f := m.Force(m.Encode(b.src, b.srcLengths, b.rows, b.srcLen), b.tgtIn, b.tgtLen)
			want := xentOf(f.Logits, b.tgtOut, cfg.TgtVocab, smoothing)
			// The same float32 passes, summed in another order.
			gradcheck.Close(t, "loss", []float64{got / want}, []float64{1}, 1e-6)
			if real := countReal(b.tgtOut); got < float64(real) || got > 20*float64(real) {
				t.Fatalf("loss %g over %d targets", got, real)
			}
		})
	}
}

// countReal is the number of targets that are not pad.
func countReal(targets []int) int {
	n := 0
	for _, y := range targets {
		if y != data.PadID {
			n++
		}
	}
	return n
}
