package transformer

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// decodeForward runs the decoder over tgtIn (time-major T×B) by teacher forcing, reading the memory mem
// (B·S, D) whose rows have srcLengths real positions. Its output (B·T, D) batch-major is the pass's final.H.
// Buffers come from a under names starting with name; the inputs must stay unchanged until the pass's backward
// has run.
func (m *Model[T]) decodeForward(w stackWeights[T], mem []T, srcLengths []int, srcLen int, tgtIn []int, rows, tgtLen int, masks [][]T, a *kernels.Arena[T], name string) *pass[T] {
	d, n := m.Cfg.Dim, rows*tgtLen
	if len(tgtIn) != n || len(srcLengths) != rows || len(mem) != rows*srcLen*d {
		panic(fmt.Sprintf("transformer: decoder over %d ids, %d lengths, memory %d for %d×%d×%d (source %d)", len(tgtIn), len(srcLengths), len(mem), rows, tgtLen, d, srcLen))
	}
	// y += Drop(CausalSelfAttn(LN1(y)));  y += Drop(CrossAttn(LN2(y), mem));  y += Drop(FFN(LN3(y)))
	return m.stackForward(true, w, tgtIn, nil, rows, tgtLen, mem, srcLengths, srcLen, masks, a.Get(name+".ln.h", n*d), a, name)
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
	p := m.decodeForward(m.weightsOf(true, param.Data(m.decoderTensors())), mem.States, mem.Lengths, s, tgtIn, rows, tgtLen, nil, kernels.NewArena[T](), "dec")
	out := make([]T, n*d)
	transpose(out, p.final.H, rows, tgtLen, d)
	f := &Forced[T]{Logits: make([]T, n*v)}
	m.logits(out, n, f.Logits)
	for l := range p.blocks {
		c := p.blocks[l].Cross
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
