package kernels

// DecoderSeq is the teacher-forced decoder over a whole batch: bridge, additive attention and LSTM step at every
// target position, keeping what the backward pass reads.
//
// Sizes: T steps, B rows, S source positions, E embedding, M memory width (2 × encoder hidden), H decoder
// hidden, A attention width. Inputs: emb (T, B, E); the encoder outputs of each direction packed as (S+2, B, M/2)
// — states time-major, then final h, then final c; bridge weights bhW, bcW (M, H), bhB, bcB (H); attention memW
// (M, A), queryW (H, A), queryB (A), v (A); cell inputW (4, E+M, H), hiddenW (4, H, H), bias (4, H). Output: out
// (T·B, H+M), row t·B+b = [s_t ; c_t] of row b.
type DecoderSeq[T Float] struct {
	T, B, S, E, M, H, A int
	Lengths             []int

	mem, keys           []T // (B, S, M), (B, S, A)
	finalH, finalC      []T // (B, M): [fwd ; bwd] final states
	h0, c0              []T // (B, H) bridge outputs
	q                   []T // (B, A) scratch
	pre                 []T // (T, B, S, A): tanh(keys + W_s s_{t-1} + b_s)
	attn                []T // (T, B, S)
	ctx                 []T // (T·B, M)
	act                 []T // (T, B, 4H): σ(i), σ(f), tanh(g), σ(o)
	hPrev, cPrev, tanhC []T // (T, B, H)
	h, c                []T // (B, H)

	dG, dh, dc, dctx, dq, dKeys, dMem, da []T
	dFinalH, dFinalC                      []T
	arena                                 *Arena[T]
	name                                  string
}

// NewDecoderSeq prepares one shape; its buffers come from arena under names starting with name, taken afresh
// by every Forward.
func NewDecoderSeq[T Float](steps, rows, srcLen, emb, mem, hidden, attn int, arena *Arena[T], name string) *DecoderSeq[T] {
	return &DecoderSeq[T]{T: steps, B: rows, S: srcLen, E: emb, M: mem, H: hidden, A: attn, arena: arena, name: name}
}

func (d *DecoderSeq[T]) buffers() {
	tb, bs, a := d.T*d.B, d.B*d.S, d.arena
	get := func(field string, n int) []T { return a.Get(d.name+"."+field, n) }
	d.mem, d.keys, d.finalH, d.finalC = get("mem", bs*d.M), get("keys", bs*d.A), get("finalH", d.B*d.M), get("finalC", d.B*d.M)
	d.h0, d.c0, d.q = get("h0", d.B*d.H), get("c0", d.B*d.H), get("q", d.B*d.A)
	d.pre, d.attn, d.ctx = get("pre", tb*d.S*d.A), get("attn", tb*d.S), get("ctx", tb*d.M)
	d.act, d.hPrev, d.cPrev, d.tanhC = get("act", tb*4*d.H), get("hPrev", tb*d.H), get("cPrev", tb*d.H), get("tanhC", tb*d.H)
	d.h, d.c = get("h", d.B*d.H), get("c", d.B*d.H)
	d.dG, d.dh, d.dc, d.dctx = get("dG", tb*4*d.H), get("dh", d.B*d.H), get("dc", d.B*d.H), get("dctx", d.B*d.M)
	d.dq, d.dKeys, d.dMem, d.da = get("dq", d.B*d.A), get("dKeys", bs*d.A), get("dMem", bs*d.M), get("da", d.S)
	d.dFinalH, d.dFinalC = get("dFinalH", d.B*d.M), get("dFinalC", d.B*d.M)
}

// DecoderWeights are the decoder's parameters (or their gradients), in the layouts of DecoderSeq.
type DecoderWeights[T Float] struct {
	BridgeHW, BridgeHB, BridgeCW, BridgeCB []T
	MemW, QueryW, QueryB, V                []T
	InputW, HiddenW, Bias                  []T
}

// unpack joins the two directions' packed encoder outputs into the memory (B, S, M) and the final states.
func (d *DecoderSeq[T]) unpack(fwd, bwd []T) {
	half := d.M / 2
	for dir, packed := range [][]T{fwd, bwd} {
		for t := 0; t < d.S+2; t++ {
			for r := 0; r < d.B; r++ {
				src := packed[(t*d.B+r)*half : (t*d.B+r+1)*half]
				switch {
				case t < d.S:
					copy(d.mem[(r*d.S+t)*d.M+dir*half:][:half], src)
				case t == d.S:
					copy(d.finalH[r*d.M+dir*half:][:half], src)
				default:
					copy(d.finalC[r*d.M+dir*half:][:half], src)
				}
			}
		}
	}
}

// Forward fills out from the inputs.
func (d *DecoderSeq[T]) Forward(emb, fwd, bwd []T, w DecoderWeights[T], out []T) {
	B, S, M, H, A, E := d.B, d.S, d.M, d.H, d.A, d.E
	in := E + M
	d.buffers()
	d.unpack(fwd, bwd)
	bridge := func(x, wt, b, dst []T) {
		Gemm(false, false, B, H, M, 1, x, M, wt, H, 0, dst, H)
		AddBias(dst, B, H, b)
		for i, v := range dst {
			dst[i] = Tanh(v)
		}
	}
	bridge(d.finalH, w.BridgeHW, w.BridgeHB, d.h0)
	bridge(d.finalC, w.BridgeCW, w.BridgeCB, d.c0)
	copy(d.h, d.h0)
	copy(d.c, d.c0)
	Gemm(false, false, B*S, A, M, 1, d.mem, M, w.MemW, A, 0, d.keys, A)
	// Embedding projections of every step at once.
	for g := 0; g < 4; g++ {
		Gemm(false, false, d.T*B, H, E, 1, emb, E, w.InputW[g*in*H:g*in*H+E*H], H, 0, d.act[g*H:], 4*H)
	}
	for t := 0; t < d.T; t++ {
		copy(d.hPrev[t*B*H:(t+1)*B*H], d.h)
		copy(d.cPrev[t*B*H:(t+1)*B*H], d.c)
		// q = W_s s_{t-1} + b_s; pre = tanh(keys + q); e = v·pre; a = masked softmax(e); ctx = Σ a h
		Gemm(false, false, B, A, H, 1, d.h, H, w.QueryW, A, 0, d.q, A)
		AddBias(d.q, B, A, w.QueryB)
		pre := d.pre[t*B*S*A : (t+1)*B*S*A]
		att := d.attn[t*B*S : (t+1)*B*S]
		ctx := d.ctx[t*B*M : (t+1)*B*M]
		for r := 0; r < B; r++ {
			qr := d.q[r*A : (r+1)*A]
			for i := 0; i < S; i++ {
				k := d.keys[(r*S+i)*A : (r*S+i+1)*A]
				p := pre[(r*S+i)*A : (r*S+i+1)*A]
				for j := range p {
					p[j] = k[j] + qr[j]
				}
				TanhSlice(p)
				var e T
				for j, pj := range p {
					e += w.V[j] * pj
				}
				att[r*S+i] = e
			}
			SoftmaxRow(att[r*S:(r+1)*S], d.Lengths[r])
			Gemm(false, false, 1, M, S, 1, att[r*S:(r+1)*S], S, d.mem[r*S*M:(r+1)*S*M], M, 0, ctx[r*M:(r+1)*M], M)
		}
		// gates += ctx W_c + s_{t-1} U + b, then the LSTM pointwise step.
		gates := d.act[t*B*4*H : (t+1)*B*4*H]
		for g := 0; g < 4; g++ {
			Gemm(false, false, B, H, M, 1, ctx, M, w.InputW[g*in*H+E*H:(g+1)*in*H], H, 1, gates[g*H:], 4*H)
		}
		Project(d.h, B, H, w.HiddenW, 4, H, gates, true)
		for r := 0; r < B; r++ {
			a := gates[r*4*H : (r+1)*4*H]
			tc := d.tanhC[(t*B+r)*H : (t*B+r+1)*H]
			for j, b := range w.Bias {
				a[j] += b
			}
			LSTMActivate(a, H)
			cr, hr := d.c[r*H:(r+1)*H], d.h[r*H:(r+1)*H]
			for j := range cr {
				cr[j] = a[GateF*H+j]*cr[j] + a[GateI*H+j]*a[GateG*H+j]
			}
			copy(tc, cr)
			TanhSlice(tc)
			for j := range hr {
				hr[j] = a[GateO*H+j] * tc[j]
			}
			o := out[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			copy(o[:H], d.h[r*H:(r+1)*H])
			copy(o[H:], ctx[r*M:(r+1)*M])
		}
	}
}

// Backward computes the gradients of the inputs from dOut (T·B, H+M): dEmb (T, B, E) and dFwd, dBwd (packed
// like the encoder outputs) are overwritten; the weight gradients in dw are added to.
func (d *DecoderSeq[T]) Backward(emb []T, w DecoderWeights[T], dOut []T, dEmb, dFwd, dBwd []T, dw DecoderWeights[T]) {
	B, S, M, H, A, E := d.B, d.S, d.M, d.H, d.A, d.E
	in := E + M
	clear(d.dh)
	clear(d.dc)
	clear(d.dKeys)
	clear(d.dMem)
	for t := d.T - 1; t >= 0; t-- {
		hPrev := d.hPrev[t*B*H : (t+1)*B*H]
		for r := 0; r < B; r++ {
			o := dOut[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			for j := 0; j < H; j++ {
				d.dh[r*H+j] += o[j]
			}
			copy(d.dctx[r*M:(r+1)*M], o[H:])
		}
		// LSTM step: h = o·tanh(c), c = f·cPrev + i·g
		dG := d.dG[t*B*4*H : (t+1)*B*4*H]
		for r := 0; r < B; r++ {
			LSTMCellBackward(d.act[(t*B+r)*4*H:(t*B+r+1)*4*H], d.tanhC[(t*B+r)*H:(t*B+r+1)*H],
				d.cPrev[(t*B+r)*H:(t*B+r+1)*H], d.dh[r*H:(r+1)*H], d.dc[r*H:(r+1)*H], H, dG[r*4*H:(r+1)*4*H])
		}
		// s_{t-1} and ctx_t feed the gates: dh = dG Uᵀ, dctx += dG W_cᵀ
		clear(d.dh)
		for g := 0; g < 4; g++ {
			Gemm(false, true, B, H, H, 1, dG[g*H:], 4*H, w.HiddenW[g*H*H:(g+1)*H*H], H, 1, d.dh, H)
			Gemm(false, true, B, M, H, 1, dG[g*H:], 4*H, w.InputW[g*in*H+E*H:(g+1)*in*H], H, 1, d.dctx, M)
		}
		// Attention: ctx = Σ_i a_i mem_i, a = softmax(e), e_i = v·pre_i, pre = tanh(keys + q), q = W_s s_{t-1} + b_s
		pre := d.pre[t*B*S*A : (t+1)*B*S*A]
		att := d.attn[t*B*S : (t+1)*B*S]
		clear(d.dq)
		for r := 0; r < B; r++ {
			dctx := d.dctx[r*M : (r+1)*M]
			ar := att[r*S : (r+1)*S]
			var dot T
			for i := 0; i < S; i++ {
				m := d.mem[(r*S+i)*M : (r*S+i+1)*M]
				dm := d.dMem[(r*S+i)*M : (r*S+i+1)*M]
				var da T
				for j, g := range dctx {
					da += g * m[j]
					dm[j] += ar[i] * g
				}
				d.da[i] = da
				dot += ar[i] * da
			}
			dq := d.dq[r*A : (r+1)*A]
			for i := 0; i < S; i++ {
				de := ar[i] * (d.da[i] - dot) // 0 on masked positions, whose weight is 0
				if de == 0 {
					continue
				}
				p := pre[(r*S+i)*A : (r*S+i+1)*A]
				dk := d.dKeys[(r*S+i)*A : (r*S+i+1)*A]
				for j, pj := range p {
					dw.V[j] += de * pj
					dz := de * w.V[j] * (1 - pj*pj)
					dk[j] += dz
					dq[j] += dz
				}
			}
		}
		Gemm(true, false, H, A, B, 1, hPrev, H, d.dq, A, 1, dw.QueryW, A)
		for r := 0; r < B; r++ {
			for j, g := range d.dq[r*A : (r+1)*A] {
				dw.QueryB[j] += g
			}
		}
		Gemm(false, true, B, H, A, 1, d.dq, A, w.QueryW, A, 1, d.dh, H)
	}
	// Weight gradients over all steps at once.
	tb := d.T * B
	for g := 0; g < 4; g++ {
		Gemm(true, false, E, H, tb, 1, emb, E, d.dG[g*H:], 4*H, 1, dw.InputW[g*in*H:g*in*H+E*H], H)
		Gemm(true, false, M, H, tb, 1, d.ctx, M, d.dG[g*H:], 4*H, 1, dw.InputW[g*in*H+E*H:(g+1)*in*H], H)
		Gemm(true, false, H, H, tb, 1, d.hPrev, H, d.dG[g*H:], 4*H, 1, dw.HiddenW[g*H*H:(g+1)*H*H], H)
		beta := T(1)
		if g == 0 {
			beta = 0
		}
		Gemm(false, true, tb, E, H, 1, d.dG[g*H:], 4*H, w.InputW[g*in*H:g*in*H+E*H], H, beta, dEmb, E)
	}
	for i := 0; i < tb; i++ {
		for j, g := range d.dG[i*4*H : (i+1)*4*H] {
			dw.Bias[j] += g
		}
	}
	// keys = mem W_h
	Gemm(true, false, M, A, B*S, 1, d.mem, M, d.dKeys, A, 1, dw.MemW, A)
	Gemm(false, true, B*S, M, A, 1, d.dKeys, A, w.MemW, A, 1, d.dMem, M)
	// Bridge: s_0 = tanh(finalH W + b), c_0 = tanh(finalC W + b); d.dh and d.dc now hold dL/ds_0 and dL/dc_0.
	dFinalH, dFinalC := d.dFinalH, d.dFinalC
	bridgeBack := func(x, y, dy, wt, dW, dB, dx []T) {
		for i := range dy {
			dy[i] *= 1 - y[i]*y[i]
		}
		Gemm(true, false, M, H, B, 1, x, M, dy, H, 1, dW, H)
		for r := 0; r < B; r++ {
			for j, g := range dy[r*H : (r+1)*H] {
				dB[j] += g
			}
		}
		Gemm(false, true, B, M, H, 1, dy, H, wt, H, 0, dx, M)
	}
	bridgeBack(d.finalH, d.h0, d.dh, w.BridgeHW, dw.BridgeHW, dw.BridgeHB, dFinalH)
	bridgeBack(d.finalC, d.c0, d.dc, w.BridgeCW, dw.BridgeCW, dw.BridgeCB, dFinalC)
	// Pack the memory and final-state gradients like the encoder outputs.
	half := M / 2
	for dir, packed := range [][]T{dFwd, dBwd} {
		for t := 0; t < S+2; t++ {
			for r := 0; r < B; r++ {
				dst := packed[(t*B+r)*half : (t*B+r+1)*half]
				switch {
				case t < S:
					copy(dst, d.dMem[(r*S+t)*M+dir*half:][:half])
				case t == S:
					copy(dst, dFinalH[r*M+dir*half:][:half])
				default:
					copy(dst, dFinalC[r*M+dir*half:][:half])
				}
			}
		}
	}
}
