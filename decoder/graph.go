package decoder

import (
	"github.com/attend-nmt/attend/align"
	"github.com/attend-nmt/attend/encoder"
	"github.com/attend-nmt/attend/graph"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
)

// GraphMasks are the dropout masks of one training graph; a nil mask means no dropout there. Emb is
// (tgtLen, rows, Emb) on the target embeddings; Out is (tgtLen·rows, Hidden+MemDim+Emb) on the output layer's
// input [s_t; ctx; emb]. Noise is standard Gumbel noise (tgtLen, rows, srcLen) for an attention that samples
// (align.Sampler), nil for the others. Between[l] is (tgtLen, rows, Hidden+MemDim) on the input [h_below ;
// c_t] of Upper[l]; Between is nil without dropout.
//
// Guide is the gold of guided alignment (tgtLen, rows, srcLen), each target position's links as a distribution
// over the source positions or 0 (align.FillGuide); nil without.
type GraphMasks struct {
	Emb, Out, Noise *G.Node
	Between         []*G.Node
	Guide           *G.Node
}

// between returns the mask on the input of Upper[l], or nil.
func (m GraphMasks) between(l int) *G.Node {
	if m.Between == nil {
		return nil
	}
	return m.Between[l]
}

// GraphLoss is how a training graph scores its outputs.
type GraphLoss struct {
	// LabelSmoothing is ε of the smoothed target (1−ε)·onehot + ε/V (0: plain cross-entropy).
	LabelSmoothing float64
	// GuideWeight is the weight of the guided-alignment loss added to the cross-entropy
	// (train.guided_alignment_weight); used only with GraphMasks.Guide.
	GuideWeight float64
}

// Graph is the teacher-forced decoder of one training graph: it reads the target input ids tgtIn and the
// reference ids tgtOut (both tgtLen × rows, time-major) at run time and returns the summed cross-entropy of
// every non-padding target word (label-smoothed as lossOpts says), and the attention weights of every step
// ((rows, srcLen) each). With a guide (masks.Guide), guided is the guided-alignment cross-entropy
// −Σ guide log(weights + ε) of every step (align.GuideLoss), and loss is the cross-entropy plus
// lossOpts.GuideWeight times it; guided is nil without a guide. With fused, the decoder loop, upper layers included (when the encoder is fused too), and
// the output layer with its loss are single ops (fusedOp over step, graph.OutputXent), and no attention nodes are
// returned; otherwise every step is built from gorgonia's own ops, the autodiff reference of the fused op.
func (d *Decoder[T]) Graph(p *graph.Params[T], enc *encoder.GraphOutput, srcLengths, tgtIn, tgtOut *[]int,
	rows, srcLen, tgtLen int, masks GraphMasks, lossOpts GraphLoss, fused bool) (loss, guided *G.Node, attention []*G.Node) {
	e, h, half := d.Cfg.Emb, d.Cfg.Hidden, d.Cfg.MemDim/2
	mul := func(a, b *G.Node) *G.Node { return G.Must(G.Mul(a, b)) }
	add := func(a, b *G.Node) *G.Node { return G.Must(G.Add(a, b)) }
	drop := func(x, mask *G.Node) *G.Node {
		if mask == nil {
			return x
		}
		return G.Must(G.HadamardProd(x, mask))
	}

	emb := graph.Embed[T](p.Arena, p.Whole(d.Emb), tgtIn, masks.Emb, tgtLen, rows, e)
	embFlat := G.Must(G.Reshape(emb, []int{tgtLen * rows, e}))
	outputLayer := func(parts []*G.Node) *G.Node {
		if fused {
			// The concatenation and the dropout happen inside the op, in its scratch: no (N, features) nodes.
			return graph.OutputXent[T](p, parts, masks.Out, p.Whole(d.OutW), p.Whole(d.OutB), tgtOut, 0, lossOpts.LabelSmoothing)
		}
		outIn := drop(graph.Concat[T](parts), masks.Out)
		logits := graph.AddBias[T](mul(outIn, p.Whole(d.OutW)), p.Whole(d.OutB))
		return graph.SoftmaxCrossEntropy[T](logits, tgtOut, 0, lossOpts.LabelSmoothing)
	}
	withGuide := func(loss, guided *G.Node) (*G.Node, *G.Node) {
		if guided == nil {
			return loss, nil
		}
		return G.Must(G.Add(loss, G.Must(G.Mul(guided, G.NewConstant(T(lossOpts.GuideWeight)))))), guided
	}
	if fused { // (the encoder is fused too: its outputs are packed)
		states, tc := d.fusedOp(p, emb, enc.Packed[0], enc.Packed[1], masks.Noise, masks.Between, srcLengths)
		if masks.Guide != nil {
			guided = d.guidedOp(p, tc, states, masks.Guide)
		}
		loss, guided = withGuide(outputLayer([]*G.Node{states, embFlat}), guided)
		return loss, guided, nil
	}

	// s_0 = tanh(W_h [h_fwd ; h_bwd] + b_h), c_0 likewise from the final cell states.
	bridge := func(final [2]*G.Node, w, b *param.Tensor[T]) *G.Node {
		sum := add(mul(final[0], p.View(w, 0, half, h)), mul(final[1], p.View(w, half*h, half, h)))
		return G.Must(G.Tanh(graph.AddBias[T](sum, p.Whole(b))))
	}
	state := bridge(enc.FinalH, d.BridgeHW, d.BridgeHB)
	cell := bridge(enc.FinalC, d.BridgeCW, d.BridgeCB)

	attn := d.Attn.Graph(p, rows, srcLen)
	var attnState *G.Node // α_{t-1}, zero at the start; nil without state
	if w := d.Attn.StateWidth(); w > 0 {
		attnState = p.Zeros("attn.state0", rows, srcLen*w)
	}
	// The scorer reads the memory [fwd ; bwd] (rows, srcLen, MemDim) in one node.
	flat := func(x *G.Node) *G.Node { return G.Must(G.Reshape(x, []int{rows * srcLen, half})) }
	memory := G.Must(G.Reshape(graph.Concat[T]([]*G.Node{flat(enc.Fwd), flat(enc.Bwd)}), []int{rows, srcLen, d.Cfg.MemDim}))
	keys := attn.Keys(memory, srcLengths)

	// Gate k reads the embedding, the context (not with AttendAfterInput) (, f_{t-1}) and s_{t-1}, each through
	// its own block of rows.
	in, md, ci, after := d.InputWidth(), d.Cfg.MemDim, d.contextIn(), d.Cfg.AttendAfterInput
	var embW, ctxW, feedW, hidW, bias [4]*G.Node
	for k := 0; k < 4; k++ {
		base := k * in * h
		embW[k] = p.View(d.InputW, base, e, h)
		if !after {
			ctxW[k] = p.View(d.InputW, base+e*h, md, h)
		}
		if d.FeedW != nil {
			feedW[k] = p.View(d.InputW, base+(e+ci)*h, h, h)
		}
		hidW[k] = p.View(d.HiddenW, k*h*h, h, h)
		bias[k] = p.View(d.Bias, k*h, h)
	}
	var feed *G.Node // f_{t-1}; nil at t = 0, where it is 0
	// Each parameter view is made once: views made again at every step would be bound (and their gradients
	// summed) once per step.
	var feedS, feedC, feedB *G.Node
	if d.FeedW != nil {
		feedS, feedC, feedB = p.View(d.FeedW, 0, h, h), p.View(d.FeedW, h*h, md, h), p.Whole(d.FeedB)
	}

	// The upper layers' weights, gate by gate, and their states, which start at zero.
	upperIn, upperHid, upperB := make([][4]*G.Node, len(d.Upper)), make([][4]*G.Node, len(d.Upper)), make([][4]*G.Node, len(d.Upper))
	upperH, upperC := make([]*G.Node, len(d.Upper)), make([]*G.Node, len(d.Upper))
	for l, u := range d.Upper {
		for k := 0; k < 4; k++ {
			upperIn[l][k] = p.View(u.InputW, k*(h+md)*h, h+md, h)
			upperHid[l][k] = p.View(u.HiddenW, k*h*h, h, h)
			upperB[l][k] = p.View(u.Bias, k*h, h)
		}
		upperH[l] = p.Zeros("dec.upper.h0", rows, h)
		upperC[l] = upperH[l]
	}

	states := make([]*G.Node, tgtLen)
	contexts := make([]*G.Node, tgtLen)
	queries := make([]*G.Node, tgtLen) // each step's attention query, for the alignment attention
	attention = make([]*G.Node, tgtLen)
	for t := 0; t < tgtLen; t++ {
		x := graph.Select[T](emb, t)
		// c_t = Σ_i a_ti h_i with a_t from the query (s_{t-1}, or s_t with AttendAfterInput) and the attention's
		// state
		var noise *G.Node
		if masks.Noise != nil {
			noise = graph.Select[T](masks.Noise, t)
		}
		attend := func() {
			queries[t] = state
			attention[t], contexts[t], attnState = attn.Step(state, keys, memory, noise, attnState, srcLengths)
		}
		if !after {
			attend()
		}
		var pre [4]*G.Node
		for k := range pre {
			sum := mul(x, embW[k])
			if !after {
				sum = add(sum, mul(contexts[t], ctxW[k]))
			}
			sum = add(sum, mul(state, hidW[k]))
			if feed != nil {
				sum = add(sum, mul(feed, feedW[k]))
			}
			pre[k] = graph.AddBias[T](sum, bias[k])
		}
		state, cell = encoder.LSTMGraph(pre[0], pre[1], pre[2], pre[3], cell)
		if after {
			attend()
		}
		states[t] = state
		if d.FeedW != nil {
			// f_t = tanh([s_t ; c_t] A + a) feeds step t+1 and replaces s_t in the output layer.
			sum := add(mul(state, feedS), mul(contexts[t], feedC))
			feed = G.Must(G.Tanh(graph.AddBias[T](sum, feedB)))
			states[t] = feed
		}
		// Each upper layer reads [the layer below's output ; c_t]; the top one's state goes to the output layer.
		for l := range d.Upper {
			x := graph.Concat[T]([]*G.Node{states[t], contexts[t]})
			if mask := masks.between(l); mask != nil {
				x = G.Must(G.HadamardProd(x, graph.Select[T](mask, t)))
			}
			var pre [4]*G.Node
			for k := range pre {
				pre[k] = graph.AddBias[T](add(mul(x, upperIn[l][k]), mul(upperH[l], upperHid[l][k])), upperB[l][k])
			}
			upperH[l], upperC[l] = encoder.LSTMGraph(pre[0], pre[1], pre[2], pre[3], upperC[l])
			states[t] = upperH[l]
		}
	}

	// logits = [s_t (f_t with input feeding, the top layer's state with more layers); ctx; emb] W_out + b_out
	// for all steps at once.
	if masks.Guide != nil {
		guidedWeights := attention
		if d.AlignW != nil {
			// Full-context alignment: the guide trains the attention whose query at step t is the step's plus
			// emb(y_t) AlignW, y_t being step t+1's input (zero for the last step, whose word is </s>).
			alignW, last := p.Whole(d.AlignW), p.Zeros("dec.align.next0", rows, e)
			guidedWeights = make([]*G.Node, tgtLen)
			for t := range guidedWeights {
				next := last
				if t+1 < tgtLen {
					next = graph.Select[T](emb, t+1)
				}
				guidedWeights[t], _, _ = attn.Step(add(queries[t], mul(next, alignW)), keys, memory, nil, nil, srcLengths)
			}
		}
		for t, a := range guidedWeights {
			g := align.GuideGraph[T](a, graph.Select[T](masks.Guide, t))
			if guided == nil {
				guided = g
			} else {
				guided = add(guided, g)
			}
		}
	}
	loss, guided = withGuide(outputLayer([]*G.Node{graph.Stack[T](states, false), graph.Stack[T](contexts, false), embFlat}), guided)
	return loss, guided, attention
}
