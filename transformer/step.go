package transformer

import (
	"fmt"
	"math"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
)

// State is the decoding state of Rows hypotheses: per decoder block, the self-attention keys and values of the
// positions decoded so far, and the cross-attention keys and values of each row's memory (computed once).
//
// The cross-attention keys and values are kept per sentence of the memory, not per row: row r reads those of
// sentence src[r], so the beams of a sentence share them and Reorder moves only an index. A row's
// self-attention keys of positions 0 … pos-1 lie back to back, posCap positions apart from the next row's.
type State[T kernels.Float] struct {
	Rows int

	mem *Memory[T]
	src []int // src[r] is the memory row (sentence) that row r reads
	pos int   // positions decoded so far, the same for every row

	d, ff, heads   int // the model's width, feed-forward width and heads
	w              stackWeights[T]
	rowCap, posCap int   // the rows and positions selfK and selfV have room for
	selfK, selfV   [][]T // per block: (rowCap, posCap, D), row r's position t at (r·posCap + t)·D
	spareK, spareV [][]T // the same shapes, where Reorder gathers rows that move out of order; nil until needed
	crossK, crossV [][]T // per block: (mem.Rows, S, D), from the memory's states
	spareSrc       []int // where Reorder gathers src

	// Scratch of Step, rowCap rows.
	x, h, q, ctx []T            // (rows, D): the residual stream, a layer norm's output, queries, the heads' contexts
	mean, rstd   []T            // (rows): a layer norm's statistics (unread)
	hidden       []T            // (rows, F): the feed-forward layer's inner activations
	att          []T            // (rows, NH, max(posCap, S)): the heads' attention weights
	keyLen       []int          // (rows): the real length of each row's sentence
	position     []T            // (D): the positions' encoding of the step
	self, cross  block.Cache[T] // the step's attentions, over the caches above
	ffn          block.FeedForward[T]
	block        block.BlockCache[T] // the step's decoder block
}

// minPositions is the positions a state's self-attention caches first have room for; they double when full.
const minPositions = 16

// Start returns the state of mem's rows before their first word: no positions decoded, each row reading its own
// sentence's memory, whose cross-attention keys and values it computes for every decoder block.
func (m *Model[T]) Start(mem *Memory[T]) *State[T] {
	d, n := m.Cfg.Dim, mem.Rows*mem.SrcLen
	if len(mem.States) < n*d || len(mem.Lengths) < mem.Rows {
		panic(fmt.Sprintf("transformer: a memory of %d×%d positions with %d states and %d lengths", mem.Rows, mem.SrcLen, len(mem.States), len(mem.Lengths)))
	}
	st := &State[T]{Rows: mem.Rows, mem: mem, src: make([]int, mem.Rows), spareSrc: make([]int, mem.Rows),
		d: d, ff: m.Cfg.FF, heads: m.Cfg.Heads, position: make([]T, d), w: m.weightsOf(true, dataOf(m.decoderTensors()))}
	for r := range st.src {
		st.src[r] = r
	}
	for _, b := range st.w.blocks {
		k, v := make([]T, n*d), make([]T, n*d)
		// K = mem W_K + b_K;  V = mem W_V + b_V  over every position of every sentence
		block.Project(m.attention(), b.Cross.KW, b.Cross.KB, mem.States, n, d, k, d)
		block.Project(m.attention(), b.Cross.VW, b.Cross.VB, mem.States, n, d, v, d)
		st.crossK, st.crossV = append(st.crossK, k), append(st.crossV, v)
	}
	st.selfK, st.selfV = make([][]T, len(m.Dec)), make([][]T, len(m.Dec))
	st.fit(mem.Rows, minPositions)
	return st
}

// Step decodes one position for every row: prev[r] is row r's previous word (BOS at the first step); it writes
// logits (rows × V_tgt) and weights (rows × S): the cross-attention of decoder block m.Cfg.AttentionLayer,
// averaged over its heads or its head m.Cfg.AlignmentHead alone (0 past the row's source length). A step
// costs one position, not the whole prefix: it is the decoder's forward pass (block.BlockCache.Forward) over the
// cached keys and values.
func (m *Model[T]) Step(st *State[T], prev []int, logits, weights []T) {
	n, d, t, s := st.Rows, m.Cfg.Dim, st.pos, st.mem.SrcLen
	if len(prev) != n || len(logits) < n*m.Cfg.TgtVocab || len(weights) < n*s {
		panic(fmt.Sprintf("transformer: Step of %d rows got %d words, %d logits and %d weights", n, len(prev), len(logits), len(weights)))
	}
	st.fit(n, t+1)
	x, h := st.x[:n*d], st.h[:n*d]
	m.embedStep(st, x, prev, t)
	for r, g := range st.src[:n] {
		st.keyLen[r] = st.mem.Lengths[g]
	}
	for l := range m.Dec {
		// the decoder's block, in place: y += SelfAttn(LN1(y)), its keys and values of position t added to the
		// cache;  y += CrossAttn(LN2(y), mem);  y += FFN(LN3(y))
		self := m.stepAttention(st, &st.self, st.selfK[l], st.selfV[l], t+1, st.posCap*d)
		cross := m.stepAttention(st, &st.cross, st.crossK[l], st.crossV[l], s, s*d)
		cross.KeyRows, cross.KeyLen = st.src, st.keyLen[:n]
		st.ffn = block.FeedForward[T]{N: n, Dim: d, Inner: m.Cfg.FF, Act: st.hidden[:n*m.Cfg.FF]}
		st.block.SetStep(m.block(true), n, self, cross, &st.ffn, h, st.mean, st.rstd)
		st.block.Forward(st.w.blocks[l], x, nil, nil, true)
		if l == m.Cfg.AttentionLayer {
			m.report(cross, weights[:n*s])
		}
	}
	// logits = LN(y) W_out + b_out, with W_out = E_tgtᵀ when tied
	kernels.LayerNorm(h, st.mean, st.rstd, x, m.DecNorm.Gain.Data, m.DecNorm.Bias.Data, n, d)
	m.logits(h, n, logits[:n*m.Cfg.TgtVocab])
	st.pos++
}

// embedStep writes into x (rows, D) the decoder's input at position t: √D · E_tgt[prev[r]] + P_t.
func (m *Model[T]) embedStep(st *State[T], x []T, prev []int, t int) {
	d := m.Cfg.Dim
	p := st.position
	if m.TgtPos != nil {
		p = m.TgtPos.Data[min(t, m.Cfg.MaxPositions-1)*d:][:d] // later positions reuse the last
	} else {
		Position(p, t)
	}
	scale := T(math.Sqrt(float64(d)))
	for r, w := range prev {
		e, o := m.TgtEmb.Data[w*d:(w+1)*d], x[r*d:(r+1)*d]
		for j := range o {
			o[j] = scale*e[j] + p[j]
		}
	}
}

// stepAttention sets c up as the step's attention of the rows' queries (one position each) over lk cached
// keys and values (k and v, row r's first key at r·stride), in the state's scratch.
func (m *Model[T]) stepAttention(st *State[T], c *block.Cache[T], k, v []T, lk, stride int) *block.Cache[T] {
	n, d := st.Rows, m.Cfg.Dim
	*c = block.Cache[T]{Attention: m.attention(), Rows: n, Lq: 1, Lk: lk, Q: st.q[:n*d], Ctx: st.ctx[:n*d],
		K: k, V: v, LdK: d, KeyStride: stride, Att: st.att[:n*m.Cfg.Heads*lk]}
	return c
}

// report writes into reported (rows × S) the weights of the step's cross-attention c reported as where the
// model looked: averaged over the heads, or head Cfg.AlignmentHead's (0 past the row's source length).
func (m *Model[T]) report(c *block.Cache[T], reported []T) {
	s := c.Lk
	clear(reported)
	for r := 0; r < c.Rows; r++ {
		valid := c.Keys(r)
		for j := 0; j < m.Cfg.Heads; j++ {
			if wj := T(m.Cfg.reportWeight(j)); wj != 0 {
				for i, a := range c.Att[(r*m.Cfg.Heads+j)*s:][:valid] {
					reported[r*s+i] += wj * a
				}
			}
		}
	}
}

// Reorder makes new row r continue old row from[r] (its caches and memory); len(from) becomes the row count.
func (st *State[T]) Reorder(from []int) {
	n := len(from)
	inPlace := n <= st.Rows // rows in increasing order move down in place: row from[r] ≥ r is not yet overwritten
	for r, f := range from {
		if f < 0 || f >= st.Rows {
			panic(fmt.Sprintf("transformer: Reorder of %d rows from row %d", st.Rows, f))
		}
		if r > 0 && f <= from[r-1] {
			inPlace = false
		}
	}
	src := st.spareSrc[:0]
	for _, f := range from {
		src = append(src, st.src[f])
	}
	st.src, st.spareSrc = src, st.src[:cap(st.src)]
	used, stride := st.pos*st.d, st.posCap*st.d // a row's cached values; rows apart
	if inPlace {
		for l := range st.selfK {
			for r, f := range from {
				if f != r {
					copyRow(st.selfK[l], st.selfK[l], r, f, stride, used)
					copyRow(st.selfV[l], st.selfV[l], r, f, stride, used)
				}
			}
		}
		st.Rows = n
		return
	}
	if n > st.rowCap {
		st.grow(max(n, 2*st.rowCap), st.posCap)
	}
	if st.spareK == nil || len(st.spareK[0]) < len(st.selfK[0]) {
		st.spareK, st.spareV = make([][]T, len(st.selfK)), make([][]T, len(st.selfK))
		for l := range st.spareK {
			st.spareK[l], st.spareV[l] = make([]T, len(st.selfK[l])), make([]T, len(st.selfK[l]))
		}
	}
	for l := range st.selfK {
		for r, f := range from {
			copyRow(st.spareK[l], st.selfK[l], r, f, stride, used)
			copyRow(st.spareV[l], st.selfV[l], r, f, stride, used)
		}
	}
	st.selfK, st.spareK = st.spareK, st.selfK
	st.selfV, st.spareV = st.spareV, st.selfV
	st.Rows = n
}

// copyRow copies the first used values of row from of src into row to of dst, rows stride values apart.
func copyRow[T kernels.Float](dst, src []T, to, from, stride, used int) {
	copy(dst[to*stride:to*stride+used], src[from*stride:from*stride+used])
}

// fit makes room in the caches and scratch for rows rows and positions positions (doubling the positions when
// they run out), keeping what the caches hold.
func (st *State[T]) fit(rows, positions int) {
	if rows <= st.rowCap && positions <= st.posCap {
		return
	}
	posCap := st.posCap
	if positions > posCap {
		posCap = max(positions, 2*posCap)
	}
	st.grow(max(rows, st.rowCap), posCap)
}

// grow lays the caches out for rowCap rows of posCap positions, keeping the positions decoded so far of the
// current rows, and sizes the scratch for as many rows.
func (st *State[T]) grow(rowCap, posCap int) {
	d, used := st.d, st.pos*st.d
	for l := range st.selfK {
		k, v := make([]T, rowCap*posCap*d), make([]T, rowCap*posCap*d)
		for r := 0; r < st.Rows; r++ {
			copy(k[r*posCap*d:][:used], st.selfK[l][r*st.posCap*d:][:used])
			copy(v[r*posCap*d:][:used], st.selfV[l][r*st.posCap*d:][:used])
		}
		st.selfK[l], st.selfV[l] = k, v
	}
	st.spareK, st.spareV = nil, nil
	st.rowCap, st.posCap = rowCap, posCap
	st.src = append(make([]int, 0, rowCap), st.src...)
	st.spareSrc = make([]int, 0, rowCap)
	st.x, st.h, st.q, st.ctx = make([]T, rowCap*d), make([]T, rowCap*d), make([]T, rowCap*d), make([]T, rowCap*d)
	st.hidden = make([]T, rowCap*st.ff)
	st.mean, st.rstd = make([]T, rowCap), make([]T, rowCap)
	st.att = make([]T, rowCap*st.heads*max(posCap, st.mem.SrcLen))
	st.keyLen = make([]int, rowCap)
}
