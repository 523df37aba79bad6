package decoder

import (
	"fmt"

	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/kernels"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Seq is the teacher-forced decoder over a whole batch: bridge, attention (any align.Scorer) and LSTM step at
// every target position, keeping what the backward pass reads. The fused training op runs it; the tests check it
// against a plain reference and finite differences.
//
// Sizes: T steps, B rows, S source positions, E embedding, M memory width (2 × encoder hidden), H decoder
// hidden. Inputs: emb (T, B, E); the encoder outputs of each direction packed as (S+2, B, M/2) — states
// time-major, then final h, then final c; the weights (Weights). Output: out (T·B, H+M), row t·B+b = [s_t ; c_t]
// of row b, or [f_t ; c_t] with input feeding (Weights.FeedW set), where f_t = tanh([s_t ; c_t] A + a) also joins
// the LSTM input of step t+1 (f_0 = 0).
type Seq[T kernels.Float] struct {
	T, B, S, E, M, H int
	Lengths          []int
	Attn             align.Scorer[T]
	// Noise is standard Gumbel noise (T, B, S) for an attention that samples (align.Sampler), nil otherwise.
	Noise []T
	// Feeding is input feeding: Forward and Backward then read Weights.FeedW and FeedB.
	Feeding bool

	mem, keys           []T // (B, S, M), (B, S, K) with K the scorer's key width
	finalH, finalC      []T // (B, M): [fwd ; bwd] final states
	h0, c0              []T // (B, H) bridge outputs
	work                []T // (T, W): the scorer's work of every step
	attn                []T // (T, B, S)
	ctx                 []T // (T·B, M)
	act                 []T // (T, B, 4H): σ(i), σ(f), tanh(g), σ(o)
	hPrev, cPrev, tanhC []T // (T, B, H)
	h, c                []T // (B, H)
	feedPrev, feed      []T // input feeding: f_{t-1} and f_t, (T, B, H) each
	feedIn              []T // input feeding: [s_t ; c_t], (T·B, H+M)

	dG, dh, dc, dctx, dScores, dKeys, dMem []T
	dFinalH, dFinalC                       []T
	dFeed, dPreF                           []T // input feeding: dL/df_{t} (B, H); dL/d(pre-tanh f) (T, B, H)
	arena                                  *kernels.Arena[T]
	name                                   string
}

// Weights are the decoder's own parameters (or their gradients) as Seq reads them; the scorer reads its own.
type Weights[T kernels.Float] struct {
	BridgeHW, BridgeHB, BridgeCW, BridgeCB []T // (M, H), (H), (M, H), (H)
	InputW, HiddenW, Bias                  []T // (4, In, H) with In = E+M (+H with feeding), (4, H, H), (4, H)
	// FeedW (H+M, H) and FeedB (H) make the attentional vector of input feeding; nil without it.
	FeedW, FeedB []T
}

// NewSeq prepares one shape; its buffers come from arena under names starting with name, taken afresh by every
// Forward.
func NewSeq[T kernels.Float](steps, rows, srcLen, emb, mem, hidden int, attn align.Scorer[T], arena *kernels.Arena[T], name string) *Seq[T] {
	return &Seq[T]{T: steps, B: rows, S: srcLen, E: emb, M: mem, H: hidden, Attn: attn, arena: arena, name: name}
}

func (d *Seq[T]) buffers() {
	tb, bs, a := d.T*d.B, d.B*d.S, d.arena
	get := func(field string, n int) []T { return a.Get(d.name+"."+field, n) }
	d.mem, d.keys, d.finalH, d.finalC = get("mem", bs*d.M), get("keys", bs*d.Attn.KeyWidth()), get("finalH", d.B*d.M), get("finalC", d.B*d.M)
	d.h0, d.c0 = get("h0", d.B*d.H), get("c0", d.B*d.H)
	d.work, d.attn, d.ctx = get("work", d.T*d.Attn.WorkSize(d.B, d.S)), get("attn", tb*d.S), get("ctx", tb*d.M)
	d.act, d.hPrev, d.cPrev, d.tanhC = get("act", tb*4*d.H), get("hPrev", tb*d.H), get("cPrev", tb*d.H), get("tanhC", tb*d.H)
	d.h, d.c = get("h", d.B*d.H), get("c", d.B*d.H)
	d.dG, d.dh, d.dc, d.dctx = get("dG", tb*4*d.H), get("dh", d.B*d.H), get("dc", d.B*d.H), get("dctx", d.B*d.M)
	d.dScores, d.dKeys, d.dMem = get("dScores", bs), get("dKeys", bs*d.Attn.KeyWidth()), get("dMem", bs*d.M)
	d.dFinalH, d.dFinalC = get("dFinalH", d.B*d.M), get("dFinalC", d.B*d.M)
	if d.Feeding {
		d.feedPrev, d.feed = get("feedPrev", tb*d.H), get("feed", tb*d.H)
		d.feedIn, d.dFeed, d.dPreF = get("feedIn", tb*(d.H+d.M)), get("dFeed", d.B*d.H), get("dPreF", tb*d.H)
	}
}

// noise returns step t's Gumbel noise (B, S), or nil.
func (d *Seq[T]) noise(t int) []T {
	if d.Noise == nil {
		return nil
	}
	return d.Noise[t*d.B*d.S : (t+1)*d.B*d.S]
}

// unpack joins the two directions' packed encoder outputs into the memory (B, S, M) and the final states.
func (d *Seq[T]) unpack(fwd, bwd []T) {
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
func (d *Seq[T]) Forward(emb, fwd, bwd []T, w Weights[T], out []T) {
	B, S, M, H, E := d.B, d.S, d.M, d.H, d.E
	in := d.inputWidth()
	if len(emb) != d.T*B*E || len(fwd) != (S+2)*B*M/2 || len(bwd) != len(fwd) || len(out) != d.T*B*(H+M) || len(d.Lengths) != B ||
		len(w.InputW) != 4*in*H || d.Feeding != (w.FeedW != nil) {
		panic(fmt.Sprintf("decoder: Seq.Forward got emb %d, fwd %d, bwd %d, out %d, lengths %d, input weights %d, feed weights %d for T=%d B=%d S=%d E=%d M=%d H=%d feeding=%v",
			len(emb), len(fwd), len(bwd), len(out), len(d.Lengths), len(w.InputW), len(w.FeedW), d.T, B, S, E, M, H, d.Feeding))
	}
	d.buffers()
	d.unpack(fwd, bwd)
	bridge := func(x, wt, b, dst []T) {
		kernels.Gemm(false, false, B, H, M, 1, x, M, wt, H, 0, dst, H)
		kernels.AddBias(dst, B, H, b)
		for i, v := range dst {
			dst[i] = kernels.Tanh(v)
		}
	}
	bridge(d.finalH, w.BridgeHW, w.BridgeHB, d.h0)
	bridge(d.finalC, w.BridgeCW, w.BridgeCB, d.c0)
	copy(d.h, d.h0)
	copy(d.c, d.c0)
	d.Attn.Keys(d.mem, d.Lengths, B, S, d.keys)
	// Embedding projections of every step at once.
	for g := 0; g < 4; g++ {
		kernels.Gemm(false, false, d.T*B, H, E, 1, emb, E, w.InputW[g*in*H:g*in*H+E*H], H, 0, d.act[g*H:], 4*H)
	}
	ws := d.Attn.WorkSize(B, S)
	for t := 0; t < d.T; t++ {
		copy(d.hPrev[t*B*H:(t+1)*B*H], d.h)
		copy(d.cPrev[t*B*H:(t+1)*B*H], d.c)
		// a_t = masked softmax(score(s_{t-1}, keys)); ctx_t = Σ_i a_ti h_i
		att := d.attn[t*B*S : (t+1)*B*S]
		ctx := d.ctx[t*B*M : (t+1)*B*M]
		if at, ok := d.Attn.(align.Attender[T]); ok {
			at.AttendStep(d.h, d.keys, d.mem, d.noise(t), d.Lengths, B, S, att, ctx, d.work[t*ws:(t+1)*ws])
		} else {
			d.Attn.Score(d.h, d.keys, B, S, att, d.work[t*ws:(t+1)*ws])
			align.Attend(att, d.Lengths, d.mem, B, S, M, att, ctx)
		}
		// gates += ctx W_c (+ f_{t-1} W_f) + s_{t-1} U + b, then the LSTM pointwise step.
		gates := d.act[t*B*4*H : (t+1)*B*4*H]
		for g := 0; g < 4; g++ {
			kernels.Gemm(false, false, B, H, M, 1, ctx, M, w.InputW[g*in*H+E*H:g*in*H+(E+M)*H], H, 1, gates[g*H:], 4*H)
			if d.Feeding && t > 0 {
				kernels.Gemm(false, false, B, H, H, 1, d.feedPrev[t*B*H:], H, w.InputW[g*in*H+(E+M)*H:(g+1)*in*H], H, 1, gates[g*H:], 4*H)
			}
		}
		kernels.Project(d.h, B, H, w.HiddenW, 4, H, gates, true)
		kernels.AddBias(gates, B, 4*H, w.Bias)
		kernels.LSTMForward(gates, d.c, B, H, d.h, d.c, d.tanhC[t*B*H:(t+1)*B*H])
		for r := 0; r < B; r++ {
			o := out[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			copy(o[:H], d.h[r*H:(r+1)*H])
			copy(o[H:], ctx[r*M:(r+1)*M])
		}
		if d.Feeding {
			d.feedForward(t, w, out)
		}
	}
}

// inputWidth is the width of the LSTM input: E+M, and H more with input feeding.
func (d *Seq[T]) inputWidth() int {
	if d.Feeding {
		return d.E + d.M + d.H
	}
	return d.E + d.M
}

// feedForward computes step t's attentional vector f_t = tanh([s_t ; c_t] A + a) from the output rows
// [s_t ; c_t] it then overwrites with [f_t ; c_t], keeping [s_t ; c_t] for the backward pass and f_t as the next
// step's f_{t-1}.
func (d *Seq[T]) feedForward(t int, w Weights[T], out []T) {
	B, M, H := d.B, d.M, d.H
	rows := out[t*B*(H+M) : (t+1)*B*(H+M)]
	f := d.feed[t*B*H : (t+1)*B*H]
	copy(d.feedIn[t*B*(H+M):(t+1)*B*(H+M)], rows)
	kernels.Gemm(false, false, B, H, H+M, 1, rows, H+M, w.FeedW, H, 0, f, H)
	kernels.AddBias(f, B, H, w.FeedB)
	kernels.TanhSlice(f)
	for r := 0; r < B; r++ {
		copy(rows[r*(H+M):r*(H+M)+H], f[r*H:(r+1)*H])
	}
	if t+1 < d.T {
		copy(d.feedPrev[(t+1)*B*H:(t+2)*B*H], f)
	}
}

// Backward computes the gradients of the inputs from dOut (T·B, H+M): dEmb (T, B, E) and dFwd, dBwd (packed
// like the encoder outputs) are overwritten; the weight gradients in dw and dAttn (one per scorer parameter) are
// added to. It reads what the last Forward kept.
func (d *Seq[T]) Backward(emb []T, w Weights[T], dOut []T, dEmb, dFwd, dBwd []T, dw Weights[T], dAttn [][]T) {
	B, S, M, H, E := d.B, d.S, d.M, d.H, d.E
	in := d.inputWidth()
	ws := d.Attn.WorkSize(B, S)
	clear(d.dh)
	clear(d.dc)
	clear(d.dKeys)
	clear(d.dMem)
	if d.Feeding {
		clear(d.dFeed)
	}
	for t := d.T - 1; t >= 0; t-- {
		hPrev := d.hPrev[t*B*H : (t+1)*B*H]
		for r := 0; r < B; r++ {
			o := dOut[(t*B+r)*(H+M) : (t*B+r+1)*(H+M)]
			if !d.Feeding {
				for j := 0; j < H; j++ {
					d.dh[r*H+j] += o[j]
				}
			}
			copy(d.dctx[r*M:(r+1)*M], o[H:])
		}
		if d.Feeding {
			// f_t = tanh([s_t ; c_t] A + a) reaches the loss through out and through step t+1's gates (dFeed).
			f, dPre := d.feed[t*B*H:(t+1)*B*H], d.dPreF[t*B*H:(t+1)*B*H]
			for r := 0; r < B; r++ {
				o := dOut[(t*B+r)*(H+M):]
				for j := 0; j < H; j++ {
					i := r*H + j
					dPre[i] = (o[j] + d.dFeed[i]) * (1 - f[i]*f[i])
				}
			}
			kernels.Gemm(false, true, B, H, H, 1, dPre, H, w.FeedW[:H*H], H, 1, d.dh, H)
			kernels.Gemm(false, true, B, M, H, 1, dPre, H, w.FeedW[H*H:], H, 1, d.dctx, M)
		}
		// LSTM step: h = o·tanh(c), c = f·cPrev + i·g
		dG := d.dG[t*B*4*H : (t+1)*B*4*H]
		kernels.LSTMBackward(d.act[t*B*4*H:(t+1)*B*4*H], d.tanhC[t*B*H:(t+1)*B*H], d.cPrev[t*B*H:(t+1)*B*H], d.dh, d.dc, B, H, dG)
		// s_{t-1} and ctx_t (and f_{t-1}) feed the gates: dh = dG Uᵀ, dctx += dG W_cᵀ, dFeed = dG W_fᵀ
		clear(d.dh)
		if d.Feeding {
			clear(d.dFeed)
		}
		for g := 0; g < 4; g++ {
			kernels.Gemm(false, true, B, H, H, 1, dG[g*H:], 4*H, w.HiddenW[g*H*H:(g+1)*H*H], H, 1, d.dh, H)
			kernels.Gemm(false, true, B, M, H, 1, dG[g*H:], 4*H, w.InputW[g*in*H+E*H:g*in*H+(E+M)*H], H, 1, d.dctx, M)
			if d.Feeding && t > 0 {
				kernels.Gemm(false, true, B, H, H, 1, dG[g*H:], 4*H, w.InputW[g*in*H+(E+M)*H:(g+1)*in*H], H, 1, d.dFeed, H)
			}
		}
		// Attention: ctx = Σ_i a_i mem_i, a = softmax(e), e = score(s_{t-1}, keys)
		if at, ok := d.Attn.(align.Attender[T]); ok {
			at.AttendStepBackward(hPrev, d.keys, d.mem, d.work[t*ws:(t+1)*ws], d.dctx, d.Lengths, B, S, d.dh, d.dKeys, d.dMem, dAttn)
		} else {
			align.AttendBackward(d.attn[t*B*S:(t+1)*B*S], d.Lengths, d.mem, d.dctx, B, S, M, d.dScores, d.dMem)
			d.Attn.ScoreBackward(hPrev, d.keys, d.work[t*ws:(t+1)*ws], d.dScores, B, S, d.dh, d.dKeys, dAttn)
		}
	}
	// Weight gradients over all steps at once.
	tb := d.T * B
	for g := 0; g < 4; g++ {
		kernels.Gemm(true, false, E, H, tb, 1, emb, E, d.dG[g*H:], 4*H, 1, dw.InputW[g*in*H:g*in*H+E*H], H)
		kernels.Gemm(true, false, M, H, tb, 1, d.ctx, M, d.dG[g*H:], 4*H, 1, dw.InputW[g*in*H+E*H:g*in*H+(E+M)*H], H)
		if d.Feeding && d.T > 1 { // f_{t-1} of steps 1..T-1 (f_0 = 0 adds nothing)
			kernels.Gemm(true, false, H, H, tb-B, 1, d.feedPrev[B*H:], H, d.dG[B*4*H+g*H:], 4*H, 1, dw.InputW[g*in*H+(E+M)*H:(g+1)*in*H], H)
		}
		kernels.Gemm(true, false, H, H, tb, 1, d.hPrev, H, d.dG[g*H:], 4*H, 1, dw.HiddenW[g*H*H:(g+1)*H*H], H)
		beta := T(1)
		if g == 0 {
			beta = 0
		}
		kernels.Gemm(false, true, tb, E, H, 1, d.dG[g*H:], 4*H, w.InputW[g*in*H:g*in*H+E*H], H, beta, dEmb, E)
	}
	kernels.AddColumnSums(dw.Bias, d.dG, tb, 4*H)
	if d.Feeding {
		kernels.Gemm(true, false, H+M, H, tb, 1, d.feedIn, H+M, d.dPreF, H, 1, dw.FeedW, H)
		kernels.AddColumnSums(dw.FeedB, d.dPreF, tb, H)
	}
	d.Attn.KeysBackward(d.mem, d.dKeys, B, S, d.dMem, dAttn)
	// Bridge: s_0 = tanh(finalH W + b), c_0 = tanh(finalC W + b); d.dh and d.dc now hold dL/ds_0 and dL/dc_0.
	dFinalH, dFinalC := d.dFinalH, d.dFinalC
	bridgeBack := func(x, y, dy, wt, dW, dB, dx []T) {
		for i := range dy {
			dy[i] *= 1 - y[i]*y[i]
		}
		kernels.Gemm(true, false, M, H, B, 1, x, M, dy, H, 1, dW, H)
		kernels.AddColumnSums(dB, dy, B, H)
		kernels.Gemm(false, true, B, M, H, 1, dy, H, wt, H, 0, dx, M)
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

// FusedInputs are the graph nodes the fused decoder op reads, by name.
type FusedInputs struct {
	Emb      *G.Node // (T, B, E) target embeddings (after dropout)
	Fwd, Bwd *G.Node // the fused encoder's packed outputs, (S+2, B, M/2) each
	// The decoder's weights, bound to the graph.
	BridgeHW, BridgeHB, BridgeCW, BridgeCB *G.Node
	InputW, HiddenW, Bias                  *G.Node
	// Attn are the scorer's parameters, in the order of its Params.
	Attn []*G.Node
	// FeedW and FeedB are input feeding's weights, nil without it.
	FeedW, FeedB *G.Node
	// Noise is Gumbel noise (T, B, S) for an attention that samples, nil otherwise.
	Noise *G.Node
}

// fusedOp is the teacher-forced decoder over a whole batch as one graph op (Seq). Output: (T·B, H+M), each row
// [s_t ; c_t], or [f_t ; c_t] with input feeding.
func fusedOp[T kernels.Float](arena *kernels.Arena[T], in FusedInputs, scorer align.Scorer[T], lengths *[]int) *G.Node {
	steps, rows, emb := in.Emb.Shape()[0], in.Emb.Shape()[1], in.Emb.Shape()[2]
	srcLen, mem := in.Fwd.Shape()[0]-2, 2*in.Fwd.Shape()[2]
	hid := in.HiddenW.Shape()[1]
	seq := NewSeq[T](steps, rows, srcLen, emb, mem, hid, scorer, arena, "dec")
	seq.Feeding = in.FeedW != nil
	nodes := append([]*G.Node{in.Emb, in.Fwd, in.Bwd, in.BridgeHW, in.BridgeHB, in.BridgeCW, in.BridgeCB,
		in.InputW, in.HiddenW, in.Bias}, in.Attn...)
	feedAt := len(nodes) // FeedW, FeedB follow the scorer's parameters
	if seq.Feeding {
		nodes = append(nodes, in.FeedW, in.FeedB)
	}
	if in.Noise != nil {
		nodes = append(nodes, in.Noise) // (its gradient stays 0)
	}
	const first = 3 // inputs before the weights
	weights := func(v [][]T) Weights[T] {
		w := Weights[T]{BridgeHW: v[3], BridgeHB: v[4], BridgeCW: v[5], BridgeCB: v[6], InputW: v[7], HiddenW: v[8], Bias: v[9]}
		if seq.Feeding {
			w.FeedW, w.FeedB = v[feedAt], v[feedAt+1]
		}
		return w
	}
	return graph.Fused(graph.FusedOp[T]{
		Name:  fmt.Sprintf("DecoderLSTM(%d,%d,%d,%d,%d,%d,%v)", steps, rows, srcLen, emb, mem, hid, seq.Feeding),
		Shape: tensor.Shape{steps * rows, hid + mem},
		Forward: func(v [][]T, out []T) {
			seq.Lengths = *lengths
			if in.Noise != nil {
				seq.Noise = v[len(v)-1]
			}
			seq.Forward(v[0], v[1], v[2], weights(v), out)
		},
		Backward: func(v [][]T, g []T) [][]T {
			grads := make([][]T, len(nodes))
			for i, n := range nodes {
				grads[i] = arena.Get(fmt.Sprintf("dec.grad%d", i), n.Shape().TotalSize())
				if i >= first {
					clear(grads[i])
				}
			}
			seq.Backward(v[0], weights(v), g, grads[0], grads[1], grads[2], weights(grads), grads[10:10+len(in.Attn)])
			return grads
		},
	}, nodes...)
}
