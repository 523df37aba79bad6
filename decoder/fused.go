package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// teacher is the teacher-forced decoder over a whole training batch, the fused op of fusedOp: the bridge, then
// step (step.go) at every target position, keeping what stepBackward reads, and the backward pass of it all.
// Letters as in step.go, and T steps.
//
// Inputs: emb (T, B, E); the encoder outputs of each direction packed as (S+2, B, M/2) — states time-major,
// then final h, then final c; the decoder's own weights, read from its tensors. Output: (T·B, H+M), row t·B+b =
// [top_t ; c_t] of row b, top_t the output of the top layer (s_t, f_t with input feeding, or the last upper
// layer's state).
type teacher[T kernels.Float] struct {
	d                   *Decoder[T]
	steps, rows, srcLen int
	arena               *kernels.Arena[T]
	mul                 *kernels.Multiplier // the products' multiplier (nil: float32 on the BLAS)
	st                  *State[T]
	mem                 *Memory[T]
	buf                 *Scratch[T]
	cache               stepCache[T]
	grads               stepGrads[T]
	finalH, finalC      []T // (B, M): [fwd ; bwd] final states
	h0, c0              []T // (B, H): the bridge's outputs
	dFinalH, dFinalC    []T
}

// take points the teacher's buffers at the arena, under names starting with "dec.": afresh at every forward
// pass, so that the cached graphs of every shape share the arena's buffers (see model.Trainer.Reserve) rather
// than each keep the ones it was made with.
func (tc *teacher[T]) take() {
	d, steps, rows, srcLen := tc.d, tc.steps, tc.rows, tc.srcLen
	get := func(name string, n int) []T { return tc.arena.Get("dec."+name, n) }
	h, md, sw := d.Cfg.Hidden, d.Cfg.MemDim, d.Attn.StateWidth()*srcLen
	tb := steps * rows
	tc.buf = d.scratch(rows, srcLen, get)
	tc.st = &State[T]{Rows: rows, Hidden: h, H: get("h", rows*h), C: get("c", rows*h), SrcLen: srcLen,
		AttnWidth: d.Attn.StateWidth(), Attn: get("attnState", rows*sw)}
	tc.mem = &Memory[T]{Rows: rows, SrcLen: srcLen, MemDim: md, KeyWidth: d.Attn.KeyWidth(), States: get("mem", rows*srcLen*md),
		Keys: get("keys", rows*srcLen*d.Attn.KeyWidth())}
	tc.finalH, tc.finalC, tc.dFinalH, tc.dFinalC = get("finalH", rows*md), get("finalC", rows*md), get("dFinalH", rows*md), get("dFinalC", rows*md)
	tc.h0, tc.c0 = get("h0", rows*h), get("c0", rows*h)
	c := &tc.cache
	*c = stepCache[T]{keep: true, noise: c.noise, masks: c.masks, guide: c.guide, guideScale: c.guideScale}
	c.query, c.cPrev, c.attnState = get("query", tb*h), get("cPrev", tb*h), get("attnStates", tb*sw)
	c.work, c.weights, c.ctx = get("work", steps*d.Attn.WorkSize(rows, srcLen)), get("weights", tb*srcLen), get("ctx", tb*md)
	c.gateIn, c.act, c.tanhC = get("gateIn", tb*(d.InputWidth()+h)), get("act", tb*4*h), get("tanhC", tb*h)
	g := &tc.grads
	*g = stepGrads[T]{dAttn: g.dAttn}
	g.dh, g.dc, g.dctx, g.dx = get("dh", rows*h), get("dc", rows*h), get("dctx", rows*md), get("dx", rows*(h+md))
	g.dState, g.dStatePrev = get("dState", rows*sw), get("dStatePrev", rows*sw)
	g.dG, g.dGateIn = get("dG", tb*4*h), get("dGateIn", rows*(d.InputWidth()+h))
	g.dKeys, g.dMem = get("dKeys", rows*srcLen*d.Attn.KeyWidth()), get("dMem", rows*srcLen*md)
	g.dWeights = get("dWeights", rows*srcLen)
	if d.AlignW != nil {
		c.next, c.alignQuery = get("alignNext", tb*d.Cfg.Emb), get("alignQuery", tb*h)
		c.alignWork, c.alignWeights = get("alignWork", steps*d.Attn.WorkSize(rows, srcLen)), get("alignWeights", tb*srcLen)
		g.dAlignQuery, g.dAlignCtx = get("dAlignQuery", rows*h), get("dAlignCtx", rows*md)
	}
	if d.FeedW != nil {
		tc.st.Feed = get("feed0", rows*h)
		c.feedIn, c.feed = get("feedIn", tb*(h+md)), get("feed", tb*h)
		g.dFeed, g.dPreF = get("dFeed", rows*h), get("dPreF", tb*h)
	}
	for l := range d.Upper {
		name := func(part string) string { return fmt.Sprintf("l%d.%s", l+2, part) }
		tc.st.UpperH = append(tc.st.UpperH, get(name("h"), rows*h))
		tc.st.UpperC = append(tc.st.UpperC, get(name("c"), rows*h))
		c.upper = append(c.upper, upperCache[T]{in: get(name("in"), tb*(h+md)), hPrev: get(name("hPrev"), tb*h),
			cPrev: get(name("cPrev"), tb*h), act: get(name("act"), tb*4*h), tanhC: get(name("tanhC"), tb*h)})
		g.dUpperH = append(g.dUpperH, get(name("dh"), rows*h))
		g.dUpperC = append(g.dUpperC, get(name("dc"), rows*h))
		g.dUpperG = append(g.dUpperG, get(name("dG"), tb*4*h))
	}
}

// unpack joins the two directions' packed encoder outputs into the memory (B, S, M) and the final states; with
// toPacked it does the opposite, from the memory's and the final states' gradients.
func (tc *teacher[T]) unpack(fwd, bwd, memory, finalH, finalC []T, toPacked bool) {
	rows, srcLen, md := tc.mem.Rows, tc.mem.SrcLen, tc.mem.MemDim
	half := md / 2
	for dir, packed := range [][]T{fwd, bwd} {
		for t := 0; t < srcLen+2; t++ {
			for r := 0; r < rows; r++ {
				p := packed[(t*rows+r)*half : (t*rows+r+1)*half]
				var m []T
				switch {
				case t < srcLen:
					m = memory[(r*srcLen+t)*md+dir*half:][:half]
				case t == srcLen:
					m = finalH[r*md+dir*half:][:half]
				default:
					m = finalC[r*md+dir*half:][:half]
				}
				if toPacked {
					copy(p, m)
				} else {
					copy(m, p)
				}
			}
		}
	}
}

// forward fills out from the inputs, lengths the batch's source lengths.
func (tc *teacher[T]) forward(emb, fwd, bwd []T, lengths []int, out []T) {
	tc.take()
	d, st, mem, c := tc.d, tc.st, tc.mem, &tc.cache
	rows, h, e, md := st.Rows, d.Cfg.Hidden, d.Cfg.Emb, d.Cfg.MemDim
	if len(emb) != tc.steps*rows*e || len(out) != tc.steps*rows*(h+md) || len(lengths) != rows {
		panic(fmt.Sprintf("decoder: teacher forward got emb %d, out %d, lengths %d for T=%d B=%d E=%d H=%d M=%d",
			len(emb), len(out), len(lengths), tc.steps, rows, e, h, md))
	}
	mem.Lengths = lengths
	tc.unpack(fwd, bwd, mem.States, tc.finalH, tc.finalC, false)
	d.bridge(tc.finalH, d.BridgeHW, d.BridgeHB, rows, tc.h0)
	d.bridge(tc.finalC, d.BridgeCW, d.BridgeCB, rows, tc.c0)
	copy(st.H, tc.h0)
	copy(st.C, tc.c0)
	clear(st.Feed) // f_0 = 0
	clear(st.Attn)
	for l := range st.UpperH { // the upper layers start from zero states
		clear(st.UpperH[l])
		clear(st.UpperC[l])
	}
	d.Attn.Keys(mem.States, lengths, rows, mem.SrcLen, mem.Keys)
	d.gateWeights(tc.buf.gateW)
	gi := d.InputWidth() + h
	tc.buf.gateProduct = kernels.PackWeights(tc.mul, "dec.gateW", tc.buf.gateW, gi, 4*h, false)
	for t := 0; t < tc.steps; t++ {
		c.t = t
		d.step(st, mem, emb[t*rows*e:(t+1)*rows*e], tc.buf, c.slot(c.weights, nil, rows, mem.SrcLen), c)
		if d.AlignW != nil { // the alignment attention, with y_t, the next step's input
			next := c.slot(c.next, nil, rows, e)
			if t+1 < tc.steps {
				copy(next, emb[(t+1)*rows*e:(t+2)*rows*e])
			} else {
				clear(next)
			}
			d.alignStep(mem, rows, c.slot(c.query, nil, rows, h), next, c.slot(c.alignQuery, nil, rows, h),
				c.slot(c.alignWork, nil, 1, d.Attn.WorkSize(rows, mem.SrcLen)), c.slot(c.alignWeights, nil, rows, mem.SrcLen), tc.buf.alignCtx)
		}
		top, ctx := d.top(st), c.slot(c.ctx, nil, rows, md)
		for r := 0; r < rows; r++ {
			o := out[(t*rows+r)*(h+md) : (t*rows+r+1)*(h+md)]
			copy(o[:h], top[r*h:(r+1)*h])
			copy(o[h:], ctx[r*md:(r+1)*md])
		}
	}
}

// backward computes, from dOut (T·B, H+M), the gradients of the inputs: dEmb (T, B, E) and dFwd, dBwd (packed
// like the encoder outputs) are overwritten, and grad(t) of each of the decoder's tensors is added to. It reads
// what the last forward pass kept.
func (tc *teacher[T]) backward(dOut, dEmb, dFwd, dBwd []T, grad func(*param.Tensor[T]) []T) {
	d, mem, c, g := tc.d, tc.mem, &tc.cache, &tc.grads
	rows, h, md := mem.Rows, d.Cfg.Hidden, d.Cfg.MemDim
	for _, b := range [][]T{g.dh, g.dc, g.dFeed, g.dState, g.dKeys, g.dMem} {
		clear(b)
	}
	for l := range g.dUpperH {
		clear(g.dUpperH[l])
		clear(g.dUpperC[l])
	}
	g.dEmb = dEmb
	if d.AlignW != nil {
		clear(g.dAlignCtx)
		g.dAlignW = grad(d.AlignW)
	}
	g.dAttn = g.dAttn[:0]
	for _, p := range d.Attn.Params() {
		g.dAttn = append(g.dAttn, grad(p))
	}
	tc.buf.gateProductT = kernels.PackWeights(tc.mul, "dec.gateWT", tc.buf.gateW, 4*h, d.InputWidth()+h, true)
	for t := tc.steps - 1; t >= 0; t-- {
		c.t = t
		d.stepBackward(mem, tc.buf, dOut[t*rows*(h+md):(t+1)*rows*(h+md)], c, g)
	}
	// Weight gradients over all steps at once: dW += xᵀ dG for each gate's block of rows of W, on AMX split
	// (bfloat16x3) where the multiplier's products are.
	tb, in, gi, ui := tc.steps*rows, d.InputWidth(), d.InputWidth()+h, h+md
	amx := tc.mul.AMXProduct("dec.dW")
	kernels.GateGradients(amx, tb, 4, h, g.dG, 4*h, kernels.GateInput[T]{X: c.gateIn, LDX: gi, M: in, DW: grad(d.InputW)},
		kernels.GateInput[T]{X: c.gateIn[in:], LDX: gi, M: h, DW: grad(d.HiddenW)})
	kernels.AddColumnSums(grad(d.Bias), g.dG, tb, 4*h)
	if d.FeedW != nil {
		kernels.GateGradients(amx, tb, 1, h, g.dPreF, h, kernels.GateInput[T]{X: c.feedIn, LDX: ui, M: ui, DW: grad(d.FeedW)})
		kernels.AddColumnSums(grad(d.FeedB), g.dPreF, tb, h)
	}
	for l, u := range d.Upper {
		uc, dG := &c.upper[l], g.dUpperG[l]
		kernels.GateGradients(amx, tb, 4, h, dG, 4*h, kernels.GateInput[T]{X: uc.in, LDX: ui, M: ui, DW: grad(u.InputW)},
			kernels.GateInput[T]{X: uc.hPrev, LDX: h, M: h, DW: grad(u.HiddenW)})
		kernels.AddColumnSums(grad(u.Bias), dG, tb, 4*h)
	}
	d.Attn.KeysBackward(mem.States, g.dKeys, rows, mem.SrcLen, g.dMem, g.dAttn)
	// forward: s_0 = tanh(finalH W + b), m_0 = tanh(finalC W + b); g.dh and g.dc now hold their gradients.
	d.bridgeBackward(tc.finalH, tc.h0, g.dh, d.BridgeHW, grad(d.BridgeHW), grad(d.BridgeHB), rows, tc.dFinalH)
	d.bridgeBackward(tc.finalC, tc.c0, g.dc, d.BridgeCW, grad(d.BridgeCW), grad(d.BridgeCB), rows, tc.dFinalC)
	tc.unpack(dFwd, dBwd, g.dMem, tc.dFinalH, tc.dFinalC, true)
}

// bridge writes out (rows, H) = tanh(in W + b) for in (rows, M): the initial state from the encoder's final one.
func (d *Decoder[T]) bridge(in []T, w, b *param.Tensor[T], rows int, out []T) {
	h := d.Cfg.Hidden
	kernels.Gemm(false, false, rows, h, d.Cfg.MemDim, 1, in, d.Cfg.MemDim, w.Data, h, 0, out, h)
	kernels.AddBias(out, rows, h, b.Data)
	for i, v := range out {
		out[i] = kernels.Tanh(v)
	}
}

// bridgeBackward is bridge's backward pass: given y = bridge's output and dy its gradient (overwritten), it adds
// the gradients of w and b into dw and db and writes that of in into dIn.
func (d *Decoder[T]) bridgeBackward(in, y, dy []T, w *param.Tensor[T], dw, db []T, rows int, dIn []T) {
	h, md := d.Cfg.Hidden, d.Cfg.MemDim
	for i := range dy {
		dy[i] *= 1 - y[i]*y[i]
	}
	kernels.Gemm(true, false, md, h, rows, 1, in, md, dy, h, 1, dw, h)
	kernels.AddColumnSums(db, dy, rows, h)
	kernels.Gemm(false, true, rows, md, h, 1, dy, h, w.Data, h, 0, dIn, md)
}

// fusedParams lists the tensors the fused op reads, in the order of its inputs after emb, fwd and bwd.
func (d *Decoder[T]) fusedParams() []*param.Tensor[T] {
	ps := append([]*param.Tensor[T]{d.BridgeHW, d.BridgeHB, d.BridgeCW, d.BridgeCB, d.InputW, d.HiddenW, d.Bias}, d.Attn.Params()...)
	if d.FeedW != nil {
		ps = append(ps, d.FeedW, d.FeedB)
	}
	for _, u := range d.Upper {
		ps = append(ps, u.InputW, u.HiddenW, u.Bias)
	}
	if d.AlignW != nil {
		ps = append(ps, d.AlignW)
	}
	return ps
}

// fusedOp is the teacher-forced decoder over a batch as one graph op (teacher): emb (T, B, E) the target
// embeddings (after dropout), fwd and bwd the fused encoder's packed outputs, noise the Gumbel noise (T, B, S) of
// an attention that samples (or nil), between the dropout masks (T, B, H+M) on each upper layer's input (or nil,
// or nil masks, without dropout).
// The output is (T·B, H+M), each row [top_t ; c_t]. The op reads the weights from the decoder's tensors, which
// are its inputs' values (each bound node views its tensor's memory). The op's teacher is returned too, for
// guidedOp.
func (d *Decoder[T]) fusedOp(p *graph.Params[T], emb, fwd, bwd, noise *G.Node, between []*G.Node, lengths *[]int) (*G.Node, *teacher[T]) {
	steps, rows, srcLen := emb.Shape()[0], emb.Shape()[1], fwd.Shape()[0]-2
	h, md := d.Cfg.Hidden, d.Cfg.MemDim
	tc := &teacher[T]{d: d, steps: steps, rows: rows, srcLen: srcLen, arena: p.Arena, mul: p.Multiplier}
	params := d.fusedParams()
	nodes := []*G.Node{emb, fwd, bwd}
	index := make(map[*param.Tensor[T]]int, len(params))
	for i, t := range params {
		nodes = append(nodes, p.Whole(t))
		index[t] = 3 + i
	}
	inputs := len(nodes) // the noise and the masks follow: their gradients stay 0
	if noise != nil {
		nodes = append(nodes, noise)
	}
	for _, m := range between { // (nil masks without dropout)
		if m != nil {
			nodes = append(nodes, m)
		}
	}
	return graph.Fused(graph.FusedOp[T]{
		Name: fmt.Sprintf("Decoder(%d,%d,%d,%d,%d,%d,%v,%d,%v,%v,%v)", steps, rows, srcLen, d.Cfg.Emb, md, h, d.FeedW != nil, len(d.Upper), noise != nil,
			d.Cfg.AttendAfterInput, d.AlignW != nil),
		Shape: tensor.Shape{steps * rows, h + md},
		Forward: func(v [][]T, out []T) {
			for i, t := range params {
				if &v[3+i][0] != &t.Data[0] {
					panic(fmt.Sprintf("decoder: the fused op's input %s is not its tensor's memory", t.Name))
				}
			}
			c, rest := &tc.cache, v[inputs:]
			c.noise, c.masks, c.guide = nil, nil, nil // (the guided-alignment op sets the guide before backward)
			if noise != nil {
				c.noise, rest = rest[0], rest[1:]
			}
			if len(rest) > 0 {
				c.masks = rest
			}
			tc.forward(v[0], v[1], v[2], *lengths, out)
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(nodes))
			for i, n := range nodes {
				grads[i] = p.Arena.Get(fmt.Sprintf("dec.grad%d", i), n.Shape().TotalSize())
				if i >= 3 {
					clear(grads[i])
				}
			}
			tc.backward(g, grads[0], grads[1], grads[2], func(t *param.Tensor[T]) []T { return grads[index[t]] })
			return grads
		},
	}, nodes...), tc
}

// guidedOp is the guided-alignment loss of the fused decoder op states (fusedOp, whose teacher is tc): the scalar
// −Σ guide log(weights + ε) (align.GuideLoss) of every step's attention weights, which the decoder op kept,
// against guide (T, B, S). Its backward pass gives the decoder op the gold and the loss's gradient, which the
// decoder's backward, run after it, adds to the weights' gradient; its own inputs get 0.
func (d *Decoder[T]) guidedOp(p *graph.Params[T], tc *teacher[T], states, guide *G.Node) *G.Node {
	s := guide.Shape()
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("GuidedAlignment(%d,%d,%d)", s[0], s[1], s[2]),
		Shape: tensor.ScalarShape(),
		Forward: func(v [][]T, out []T) {
			weights := tc.cache.weights
			if d.AlignW != nil {
				weights = tc.cache.alignWeights // the guide trains the alignment attention
			}
			out[0] = T(align.GuideLoss(weights, v[1]))
		},
		Backward: func(v [][]T, g []T) [][]T {
			tc.cache.guide, tc.cache.guideScale = v[1], g[0]
			grads := [][]T{p.Arena.Get("dec.guided.dStates", len(v[0])), p.Arena.Get("dec.guided.dGuide", len(v[1]))}
			clear(grads[0])
			clear(grads[1])
			return grads
		},
	}, states, guide)
}
