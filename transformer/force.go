package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
)

// decMasks is the decoder's dropout masks, each time-major (T, B, D); nil (or missing) masks mean no dropout.
type decMasks[T kernels.Float] struct {
	emb             []T
	self, cross, ff [][]T // per block
}

// decBlockCache is what one decoder block's forward pass keeps.
type decBlockCache[T kernels.Float] struct {
	ln1, ln2, ln3 normCache[T]
	self, cross   *block.Cache[T]
	ff            *block.FeedForward[T]
}

// decPass is one run of the decoder's forward pass by teacher forcing.
type decPass[T kernels.Float] struct {
	rows, tgtLen, srcLen, dim int
	tgtIn                     []int
	masks                     decMasks[T]
	emb                       embedding[T]
	blocks                    []decBlockCache[T]
	final                     normCache[T] // final.h (B·T, D) is the decoder's output
	arena                     *kernels.Arena[T]
	name                      string
}

// decodeForward runs the decoder over tgtIn (time-major T×B) by teacher forcing, reading the memory mem
// (B·S, D) whose rows have srcLengths real positions. Its output (B·T, D) batch-major is the pass's final.h.
// Buffers come from a under names starting with name; the inputs must stay unchanged until the pass's backward
// has run.
func (m *Model[T]) decodeForward(w decWeights[T], mem []T, srcLengths []int, srcLen int, tgtIn []int, rows, tgtLen int, masks decMasks[T], a *kernels.Arena[T], name string) *decPass[T] {
	d, n := m.Cfg.Dim, rows*tgtLen
	if len(tgtIn) != n || len(srcLengths) != rows || len(mem) != rows*srcLen*d {
		panic(fmt.Sprintf("transformer: decoder over %d ids, %d lengths, memory %d for %d×%d×%d (source %d)", len(tgtIn), len(srcLengths), len(mem), rows, tgtLen, d, srcLen))
	}
	p := &decPass[T]{rows: rows, tgtLen: tgtLen, srcLen: srcLen, dim: d, tgtIn: tgtIn, masks: masks,
		emb: embedding[T]{table: w.emb, pos: w.pos, dim: d}, arena: a, name: name}
	// y = (√D · E_tgt[w] + P) ⊙ mask
	x := a.Get(name+".x", n*d)
	sinusoid := a.Get(name+".sinusoid", tgtLen*d)
	p.emb.sinusoids(sinusoid, tgtLen)
	p.emb.forward(x, tgtIn, rows, tgtLen, masks.emb, sinusoid)
	y := a.Get(name+".y", n*d)
	// residual returns a copy of x with y ⊙ mask added: the residual stream after a sub-layer.
	residual := func(buf string, x, mask []T) []T {
		next := a.Get(buf, n*d)
		copy(next, x)
		addDropped(next, y, mask, rows, tgtLen, d)
		return next
	}
	for l := range m.Dec {
		bw, pre := w.blocks[l], fmt.Sprintf("%s.%d", name, l)
		p.blocks = append(p.blocks, decBlockCache[T]{
			ln1: newNormCache(a, pre+".ln1", n, d), ln2: newNormCache(a, pre+".ln2", n, d), ln3: newNormCache(a, pre+".ln3", n, d),
			self:  block.NewCache(a, pre+".self", m.attention(), rows, tgtLen, tgtLen, nil, nil, true),
			cross: block.NewCache(a, pre+".cross", m.attention(), rows, tgtLen, srcLen, srcLengths, nil, false),
			ff:    block.NewFeedForward(a, pre+".act", n, d, m.Cfg.FF)})
		c := &p.blocks[l]
		// y += Drop(CausalSelfAttn(LN1(y)))
		c.ln1.forward(bw.norm1, x, n, d)
		c.self.Forward(bw.self, c.ln1.h, c.ln1.h, y, false)
		x = residual(pre+".x1", x, maskAt(masks.self, l))
		// y += Drop(CrossAttn(LN2(y), mem))
		c.ln2.forward(bw.norm2, x, n, d)
		c.cross.Forward(bw.cross, c.ln2.h, mem, y, false)
		x = residual(pre+".x2", x, maskAt(masks.cross, l))
		// y += Drop(FFN(LN3(y)))
		c.ln3.forward(bw.norm3, x, n, d)
		c.ff.Forward(bw.ff, c.ln3.h, y, false)
		x = residual(pre+".x3", x, maskAt(masks.ff, l))
	}
	// out = LN(y)
	p.final = newNormCache(a, name+".ln", n, d)
	p.final.forward(w.norm, x, n, d)
	return p
}

// transpose writes src (A, B, width), its first two axes swapped, into dst (B, A, width): batch-major rows to
// time-major ones, or back.
func transpose[T kernels.Float](dst, src []T, a, b, width int) {
	for i := 0; i < a; i++ {
		for j := 0; j < b; j++ {
			copy(dst[(j*a+i)*width:(j*a+i+1)*width], src[(i*b+j)*width:(i*b+j+1)*width])
		}
	}
}

// Forced is a teacher-forced pass's output.
type Forced[T kernels.Float] struct {
	Logits []T   // (T, B, V_tgt) time-major: row t·B+r
	Cross  [][]T // Cross[l*NH+j]: decoder block l, head j, (T, B, S) time-major weights over the source (0 past a row's length)
}

// Force runs the decoder over tgtIn (time-major T×B, data.Batch.TgtIn) by teacher forcing, without dropout.
func (m *Model[T]) Force(mem *Memory[T], tgtIn []int, tgtLen int) *Forced[T] {
	d, v, rows, s := m.Cfg.Dim, m.Cfg.TgtVocab, mem.Rows, mem.SrcLen
	n := rows * tgtLen
	p := m.decodeForward(m.decWeightsOf(dataOf(m.decoderTensors())), mem.States, mem.Lengths, s, tgtIn, rows, tgtLen, decMasks[T]{}, kernels.NewArena[T](), "dec")
	out := make([]T, n*d)
	transpose(out, p.final.h, rows, tgtLen, d)
	f := &Forced[T]{Logits: make([]T, n*v)}
	m.logits(out, n, f.Logits)
	for l := range p.blocks {
		c := p.blocks[l].cross
		for j := 0; j < m.Cfg.Heads; j++ {
			w := make([]T, n*s)
			c.HeadWeights(w, j)
			f.Cross = append(f.Cross, w)
		}
	}
	return f
}

// logits writes into logits (n, V) the output layer of the decoder's outputs out (n, D): out W_out + b_out,
// with W_out = E_tgtᵀ when tied.
func (m *Model[T]) logits(out []T, n int, logits []T) {
	d, v := m.Cfg.Dim, m.Cfg.TgtVocab
	if m.OutW == nil {
		kernels.Gemm(false, true, n, v, d, 1, out, d, m.TgtEmb.Data, d, 0, logits, v)
	} else {
		kernels.Linear(out, m.OutW.Data, n, d, v, logits, v)
	}
	kernels.AddBias(logits, n, v, m.OutB.Data)
}
