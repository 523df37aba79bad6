package decoder

import (
	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/kernels"
)

// Letters in this file: B rows, S source positions, E embedding, M memory width, H hidden units, I the first
// layer's input width (E+M, E alone with Config.AttendAfterInput, +H with input feeding), K the attention's key
// width, W its state width per position.
//
// One decoder step, the one forward pass that translation (Step, advance) and training (the fused op, fused.go)
// share. In Bahdanau's order (the default) the attention's query is the state before the step:
//
//	a_t, c_t, α_t = attention(s_{t-1}, keys, memory, α_{t-1})        (align.Attention.Step; α: its state)
//	s_t, m_t      = LSTM([emb(y_{t-1}); c_t (; f_{t-1})], s_{t-1}, m_{t-1})
//
// and with Config.AttendAfterInput (Luong's order) the state after the LSTM has read y_{t-1}:
//
//	s_t, m_t      = LSTM([emb(y_{t-1}) (; f_{t-1})], s_{t-1}, m_{t-1})
//	a_t, c_t, α_t = attention(s_t, keys, memory, α_{t-1})
//
// then, in both orders,
//
//	f_t           = tanh([s_t; c_t] A + a)                           (input feeding)
//	h^l_t         = LSTM_l([h^{l-1}_t; c_t] ⊙ mask_l, h^l_{t-1})       (each layer above the first)
//
// and the top layer's output (s_t, f_t or the last h^l_t) with c_t goes to the output layer. stepBackward is its
// backward pass, reading what the step kept in a stepCache.

// stepCache is what the steps of a training batch keep for their backward passes, every step's values in
// buffers of T steps (time-major), and the training inputs of the steps (noise, dropout masks). At inference the
// decoder passes a cache whose keep is false: each step then works in its Scratch and keeps nothing.
type stepCache[T kernels.Float] struct {
	keep bool
	t    int // the step being computed
	// Inputs of the steps: Gumbel noise (T, B, S) for an attention that samples, and the dropout masks
	// (T, B, H+M) on each upper layer's input; nil when there are none.
	noise []T
	masks [][]T
	// What the steps computed.
	// query is (T, B, H), the attention's query of each step: s_{t-1}, the first layer's state before the step,
	// or s_t, its state after it, with Config.AttendAfterInput.
	query        []T
	cPrev        []T // (T, B, H): the first layer's cell before each step
	attnState    []T // (T, B, S·W): the attention's state before each step
	work         []T // (T, WorkSize): the attention's work
	weights, ctx []T // (T, B, S), (T, B, M)
	gateIn       []T // (T, B, I+H): [emb; c_t (; f_{t-1}); s_{t-1}], without c_t with Config.AttendAfterInput
	act, tanhC   []T // (T, B, 4H), (T, B, H): the LSTM's activations and tanh of its cell
	feedIn, feed []T // input feeding: [s_t; c_t] (T, B, H+M) and f_t (T, B, H)
	upper        []upperCache[T]
	// guide is the gold of guided alignment (T, B, S), nil without; the backward pass adds guideScale times the
	// gradient of −Σ guide log(weights + ε) (align.GuideLoss) to that of the weights.
	guide      []T
	guideScale T
	// With Config.FullContextAlignment: next (T, B, E) the embeddings of the words each step aligns, y_t (the
	// input of step t+1; zero for the last step, whose word is </s>); alignQuery (T, B, H), alignWork (T,
	// WorkSize) and alignWeights (T, B, S) the alignment attention's query, work and weights. The guide then
	// trains alignWeights, not weights. nil without.
	next, alignQuery, alignWork, alignWeights []T
}

// upperCache is what one upper layer's steps keep: its input after the mask (T, B, H+M), its state before each
// step (T, B, H each), its activations (T, B, 4H) and tanh of its cell (T, B, H).
type upperCache[T kernels.Float] struct {
	in, hPrev, cPrev, act, tanhC []T
}

// slot returns step t's part, rows × width values, of a cache buffer, or scratch when nothing is kept; nil when
// that is nil.
func (c *stepCache[T]) slot(all, scratch []T, rows, width int) []T {
	switch {
	case c.keep && all != nil:
		return all[c.t*rows*width : (c.t+1)*rows*width]
	case !c.keep && scratch != nil:
		return scratch[:rows*width]
	}
	return nil
}

// step advances st, whose buffers may be longer than st.Rows rows, by one word whose embeddings are emb
// (rows, E): it writes the attention weights (rows, S) into weights and leaves the context in the cache's or
// buf's ctx (stepContext), the top layer's output in st (top). buf holds the scratch and the LSTM's weights in one
// matrix (gateW); c says what to keep.
func (d *Decoder[T]) step(st *State[T], mem *Memory[T], emb []T, buf *Scratch[T], weights []T, c *stepCache[T]) {
	rows, h, e, md := st.Rows, d.Cfg.Hidden, d.Cfg.Emb, d.Cfg.MemDim
	after := d.Cfg.AttendAfterInput
	if c.keep {
		copy(c.slot(c.cPrev, nil, rows, h), st.C)
		copy(c.slot(c.attnState, nil, rows, d.Attn.StateWidth()*mem.SrcLen), st.Attn)
	}
	ctx := c.slot(c.ctx, buf.ctx, rows, md)
	if !after {
		d.attend(st, mem, buf, weights, ctx, c) // query s_{t-1}
	}
	// gates = [emb; (c_t;) (f_{t-1};) s_{t-1}] · [W_ih; W_hh] + b: one product for the four gates.
	in, gi, ci := d.InputWidth(), d.InputWidth()+h, d.contextIn()
	gateIn := c.slot(c.gateIn, buf.gateIn, rows, gi)
	for r := 0; r < rows; r++ {
		row := gateIn[r*gi : (r+1)*gi]
		copy(row[:e], emb[r*e:(r+1)*e])
		copy(row[e:e+ci], ctx[r*md:r*md+ci])
		if st.Feed != nil {
			copy(row[e+ci:in], st.Feed[r*h:(r+1)*h])
		}
		copy(row[in:], st.H[r*h:(r+1)*h])
	}
	gates := c.slot(c.act, buf.gates, rows, 4*h)
	if buf.gateProduct != nil {
		buf.gateProduct.Mul(any(gateIn).([]float32), rows, gi, any(gates).([]float32), 4*h, false)
	} else {
		kernels.Gemm(false, false, rows, 4*h, gi, 1, gateIn, gi, buf.gateW, 4*h, 0, gates, 4*h)
	}
	kernels.AddBias(gates, rows, 4*h, d.Bias.Data)
	kernels.LSTMForward(gates, st.C, rows, h, st.H, st.C, c.slot(c.tanhC, nil, rows, h))
	if after {
		d.attend(st, mem, buf, weights, ctx, c) // query s_t
	}
	// With input feeding, f_t = tanh([s_t; c_t] A + a) replaces s_t as the layer's output and feeds the next step.
	below := st.H
	if st.Feed != nil {
		fi := h + md
		feedIn := c.slot(c.feedIn, buf.feedIn, rows, fi)
		for r := 0; r < rows; r++ {
			copy(feedIn[r*fi:r*fi+h], st.H[r*h:(r+1)*h])
			copy(feedIn[r*fi+h:(r+1)*fi], ctx[r*md:(r+1)*md])
		}
		kernels.Gemm(false, false, rows, h, fi, 1, feedIn, fi, d.FeedW.Data, h, 0, st.Feed, h)
		kernels.AddBias(st.Feed, rows, h, d.FeedB.Data)
		kernels.TanhSlice(st.Feed[:rows*h])
		copy(c.slot(c.feed, nil, rows, h), st.Feed)
		below = st.Feed
	}
	// Each upper layer reads [the layer below's output; c_t] (⊙ its dropout mask in training).
	for l, u := range d.Upper {
		ui := h + md
		uc := &upperCache[T]{}
		if c.keep {
			uc = &c.upper[l]
		}
		uh, ucell := st.UpperH[l], st.UpperC[l]
		if c.keep {
			copy(c.slot(uc.hPrev, nil, rows, h), uh)
			copy(c.slot(uc.cPrev, nil, rows, h), ucell)
		}
		x := c.slot(uc.in, buf.upperIn, rows, ui)
		for r := 0; r < rows; r++ {
			copy(x[r*ui:r*ui+h], below[r*h:(r+1)*h])
			copy(x[r*ui+h:(r+1)*ui], ctx[r*md:(r+1)*md])
		}
		if c.masks != nil {
			kernels.MulSlice(x, c.slot(c.masks[l], nil, rows, ui))
		}
		g := c.slot(uc.act, buf.gates, rows, 4*h)
		kernels.Project(x, rows, ui, u.InputW.Data, 4, h, g, false)
		kernels.AddBias(g, rows, 4*h, u.Bias.Data)
		kernels.Project(uh, rows, h, u.HiddenW.Data, 4, h, g, true)
		kernels.LSTMForward(g, ucell, rows, h, uh, ucell, c.slot(uc.tanhC, nil, rows, h))
		below = uh
	}
}

// attend writes the attention weights (rows, S) of st's rows and the context c_t = Σ_i a_ti h_i (rows, M) into
// ctx, the query being the first layer's state st.H (s_{t-1} or s_t, as Config.AttendAfterInput says); the
// attention's state α_{t-1}, in st, becomes α_t.
func (d *Decoder[T]) attend(st *State[T], mem *Memory[T], buf *Scratch[T], weights, ctx []T, c *stepCache[T]) {
	rows, h, md, sl := st.Rows, d.Cfg.Hidden, d.Cfg.MemDim, mem.SrcLen
	if c.keep || d.AlignW != nil { // the query, for attendBackward and Align
		copy(c.slot(c.query, buf.query, rows, h), st.H)
	}
	sw := d.Attn.StateWidth() * sl
	s := align.Step[T]{Rows: rows, SrcLen: sl, Query: st.H[:rows*h], Keys: mem.Keys[:rows*sl*mem.KeyWidth],
		Memory: mem.States[:rows*sl*md], Lengths: mem.Lengths[:rows], Noise: c.slot(c.noise, nil, rows, sl),
		Weights: weights, Context: ctx, Work: c.slot(c.work, buf.work, 1, d.Attn.WorkSize(rows, sl))}
	if sw > 0 {
		s.State, s.Next = st.Attn[:rows*sw], buf.next[:rows*sw]
	}
	d.Attn.Step(s)
	copy(s.State, s.Next)
}

// attendBackward is attend's backward pass for step c.t of a training batch: it adds the gradient of the query
// into g.dh and those of the keys, memory and attention's parameters into g, from g.dctx (the context's) and,
// with guided alignment, the guide's gradient of the weights; the attention's state gradient moves one step
// back.
func (d *Decoder[T]) attendBackward(mem *Memory[T], c *stepCache[T], g *stepGrads[T]) {
	rows, h, md, sl := mem.Rows, d.Cfg.Hidden, d.Cfg.MemDim, mem.SrcLen
	sw := d.Attn.StateWidth() * sl
	s := align.Step[T]{Rows: rows, SrcLen: sl, Query: c.slot(c.query, nil, rows, h), Keys: mem.Keys, Memory: mem.States, Lengths: mem.Lengths,
		Noise: c.slot(c.noise, nil, rows, sl), Weights: c.slot(c.weights, nil, rows, sl), Context: c.slot(c.ctx, nil, rows, md),
		Work: c.slot(c.work, nil, 1, d.Attn.WorkSize(rows, sl))}
	grad := align.StepGrad[T]{Context: g.dctx, Query: g.dh, Keys: g.dKeys, Memory: g.dMem, Params: g.dAttn}
	if c.alignWeights != nil {
		d.alignBackward(mem, c, g)
	} else if c.guide != nil { // guided alignment: the gradient of scale · −Σ g log(a + ε) on this step's weights
		clear(g.dWeights)
		align.GuideBackward(s.Weights, c.slot(c.guide, nil, rows, sl), c.guideScale, g.dWeights)
		grad.Weights = g.dWeights
	}
	if sw > 0 {
		s.State = c.slot(c.attnState, nil, rows, sw)
		clear(g.dStatePrev)
		grad.Next, grad.State = g.dState, g.dStatePrev
	}
	d.Attn.StepBackward(s, grad)
	g.dState, g.dStatePrev = g.dStatePrev, g.dState
}

// alignBackward is the backward pass of step c.t's alignment attention (Config.FullContextAlignment), which
// only the guided-alignment loss reads: the guide's gradient of its weights goes back to the query — into g.dh,
// the gradient of the step's query state, and through q = query + next·AlignW into AlignW's gradient and that
// of the next step's input embedding (g.dEmb, which step c.t+1's backward pass has written) — and into the keys,
// memory and attention's parameters.
func (d *Decoder[T]) alignBackward(mem *Memory[T], c *stepCache[T], g *stepGrads[T]) {
	if c.guide == nil {
		return
	}
	rows, h, e, sl := mem.Rows, d.Cfg.Hidden, d.Cfg.Emb, mem.SrcLen
	s := align.Step[T]{Rows: rows, SrcLen: sl, Query: c.slot(c.alignQuery, nil, rows, h), Keys: mem.Keys, Memory: mem.States,
		Lengths: mem.Lengths, Weights: c.slot(c.alignWeights, nil, rows, sl), Work: c.slot(c.alignWork, nil, 1, d.Attn.WorkSize(rows, sl)),
		Context: g.dAlignCtx} // (not kept: only its width is read)
	clear(g.dWeights)
	align.GuideBackward(s.Weights, c.slot(c.guide, nil, rows, sl), c.guideScale, g.dWeights)
	clear(g.dAlignQuery)
	d.Attn.StepBackward(s, align.StepGrad[T]{Context: g.dAlignCtx, Weights: g.dWeights, Query: g.dAlignQuery, Keys: g.dKeys,
		Memory: g.dMem, Params: g.dAttn})
	for i, v := range g.dAlignQuery {
		g.dh[i] += v
	}
	// q = query + next·AlignW: dAlignW += nextᵀ dq, and d next = dq AlignWᵀ (the last step's next is zero).
	next := c.slot(c.next, nil, rows, e)
	kernels.Gemm(true, false, e, h, rows, 1, next, e, g.dAlignQuery, h, 1, g.dAlignW, h)
	if steps := len(c.next) / (rows * e); c.t+1 < steps {
		dNext := g.dEmb[(c.t+1)*rows*e : (c.t+2)*rows*e]
		kernels.Gemm(false, true, rows, e, h, 1, g.dAlignQuery, h, d.AlignW.Data, h, 1, dNext, e)
	}
}

// top is the output of the top layer of st: the last upper layer's state, else f_t with input feeding, else s_t.
func (d *Decoder[T]) top(st *State[T]) []T {
	switch {
	case len(st.UpperH) > 0:
		return st.UpperH[len(st.UpperH)-1]
	case st.Feed != nil:
		return st.Feed
	}
	return st.H
}

// stepGrads are the gradients that the backward passes of a batch's steps carry from step to step and add to.
type stepGrads[T kernels.Float] struct {
	dh, dc      []T   // (B, H): of s_t and m_t, the first layer's state after the step being differentiated
	dFeed       []T   // (B, H): of f_t through the next step's input (input feeding)
	dState      []T   // (B, S·W): of the attention's state after the step
	dStatePrev  []T   // (B, S·W): of its state before the step
	dUpperH     [][]T // (B, H) each: of each upper layer's state and cell after the step
	dUpperC     [][]T
	dctx, dx    []T // (B, M), (B, H+M): scratch
	dG          []T // (T, B, 4H): the first layer's pre-activation gradients of every step
	dPreF       []T // (T, B, H): input feeding's pre-tanh gradients of every step
	dUpperG     [][]T
	dGateIn     []T // (B, I+H): scratch
	dKeys, dMem []T // (B, S, K), (B, S, M): added to over all steps
	dWeights    []T // (B, S): scratch, the guided-alignment gradient of a step's weights
	// dAlignQuery (B, H) and dAlignCtx (B, M, zero) are scratch of the alignment attention's backward pass
	// (Config.FullContextAlignment), dAlignW AlignW's gradient, added to; nil without.
	dAlignQuery, dAlignCtx, dAlignW []T
	dEmb                            []T   // (T, B, E): written
	dAttn                           [][]T // the attention's parameter gradients, added to
}

// stepBackward is the backward pass of step t of a training batch of B rows, which c kept: given dOut (B, H+M),
// the gradient of [top; c_t], and the gradients g carries from step t+1, it leaves in g those of the state
// before step t and writes step t's gradients of the pre-activations and of the embeddings. mem is the batch's
// memory; buf holds the LSTM's weights in one matrix (gateW).
func (d *Decoder[T]) stepBackward(mem *Memory[T], buf *Scratch[T], dOut []T, c *stepCache[T], g *stepGrads[T]) {
	rows, h, e, md := mem.Rows, d.Cfg.Hidden, d.Cfg.Emb, d.Cfg.MemDim
	in, gi, ci, ui := d.InputWidth(), d.InputWidth()+h, d.contextIn(), h+md
	dTop := buf.dTop[:rows*h] // the top layer's output gradient, then each layer's below it
	for r := 0; r < rows; r++ {
		copy(dTop[r*h:(r+1)*h], dOut[r*ui:r*ui+h])
		copy(g.dctx[r*md:(r+1)*md], dOut[r*ui+h:(r+1)*ui])
	}
	// forward: h^l_t = LSTM_l(x_l, h^l_{t-1}), x_l = [below; c_t] ⊙ mask_l
	for l := len(d.Upper) - 1; l >= 0; l-- {
		u, uc := d.Upper[l], &c.upper[l]
		dh, dG := g.dUpperH[l], c.slot(g.dUpperG[l], nil, rows, 4*h)
		for i, v := range dTop {
			dh[i] += v
		}
		kernels.LSTMBackward(c.slot(uc.act, nil, rows, 4*h), c.slot(uc.tanhC, nil, rows, h), c.slot(uc.cPrev, nil, rows, h),
			dh, g.dUpperC[l], rows, h, dG)
		for k := 0; k < 4; k++ {
			beta := T(1)
			if k == 0 {
				beta = 0
			}
			// dx = dG · W_ihᵀ;  dh^l_{t-1} = dG · W_hhᵀ
			kernels.Gemm(false, true, rows, ui, h, 1, dG[k*h:], 4*h, u.InputW.Data[k*ui*h:(k+1)*ui*h], h, beta, g.dx, ui)
			kernels.Gemm(false, true, rows, h, h, 1, dG[k*h:], 4*h, u.HiddenW.Data[k*h*h:(k+1)*h*h], h, beta, dh, h)
		}
		if c.masks != nil {
			kernels.MulSlice(g.dx, c.slot(c.masks[l], nil, rows, ui))
		}
		for r := 0; r < rows; r++ {
			copy(dTop[r*h:(r+1)*h], g.dx[r*ui:r*ui+h])
			for j, v := range g.dx[r*ui+h : (r+1)*ui] {
				g.dctx[r*md+j] += v
			}
		}
	}
	// forward: f_t = tanh([s_t; c_t] A + a), read by the layer above (dTop) and by step t+1's gates (dFeed)
	if d.FeedW != nil {
		f, dPre := c.slot(c.feed, nil, rows, h), c.slot(g.dPreF, nil, rows, h)
		for i := range dPre {
			dPre[i] = (dTop[i] + g.dFeed[i]) * (1 - f[i]*f[i])
		}
		kernels.Gemm(false, true, rows, h, h, 1, dPre, h, d.FeedW.Data[:h*h], h, 1, g.dh, h)
		kernels.Gemm(false, true, rows, md, h, 1, dPre, h, d.FeedW.Data[h*h:], h, 1, g.dctx, md)
	} else {
		for i, v := range dTop {
			g.dh[i] += v
		}
	}
	// forward (Config.AttendAfterInput): a_t, c_t, α_t = attention(s_t, keys, memory, α_{t-1}); g.dh now holds the
	// rest of the gradient of s_t, g.dctx all of that of c_t.
	if d.Cfg.AttendAfterInput {
		d.attendBackward(mem, c, g)
	}
	// forward: s_t, m_t = LSTM(gates), gates = [emb; (c_t;) (f_{t-1};) s_{t-1}] · gateW + b
	dG := c.slot(g.dG, nil, rows, 4*h)
	kernels.LSTMBackward(c.slot(c.act, nil, rows, 4*h), c.slot(c.tanhC, nil, rows, h), c.slot(c.cPrev, nil, rows, h), g.dh, g.dc, rows, h, dG)
	if buf.gateProductT != nil {
		buf.gateProductT.Mul(any(dG).([]float32), rows, 4*h, any(g.dGateIn).([]float32), gi, false)
	} else {
		kernels.Gemm(false, true, rows, gi, 4*h, 1, dG, 4*h, buf.gateW, 4*h, 0, g.dGateIn, gi)
	}
	dEmb := c.slot(g.dEmb, nil, rows, e)
	for r := 0; r < rows; r++ {
		row := g.dGateIn[r*gi : (r+1)*gi]
		copy(dEmb[r*e:(r+1)*e], row[:e])
		for j, v := range row[e : e+ci] {
			g.dctx[r*md+j] += v
		}
		if d.FeedW != nil {
			copy(g.dFeed[r*h:(r+1)*h], row[e+ci:in])
		}
		copy(g.dh[r*h:(r+1)*h], row[in:])
	}
	// forward (Bahdanau's order): a_t, c_t, α_t = attention(s_{t-1}, keys, memory, α_{t-1})
	if !d.Cfg.AttendAfterInput {
		d.attendBackward(mem, c, g)
	}
}
