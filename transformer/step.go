package transformer

import (
	"fmt"
	"math"
	"slices"

	"github.com/attend-nmt/attend/block"
	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
)

// State is the decoding state of Rows hypotheses: per decoder block, the self-attention keys and values of the
// positions each row has decoded, and the cross-attention keys and values of each row's sentence.
//
// Each row has its own position: rows that join (Join) start at 0 beside rows far into their sentences. Row r's
// self-attention keys of its positions 0 … pos-1 lie back to back, posCap positions apart from the next row's.
// The cross-attention keys and values are computed once per memory, by the Start of the state it was started
// on, and read there: the beams of a sentence and rows joined from other states share them, and Reorder and Join
// move only a pointer.
type State[T kernels.Float] struct {
	Rows int

	rows, spareRows []row[T] // what each row decodes; spareRows is where Reorder gathers them

	d, ff, heads   int // the model's width, feed-forward width and heads
	w              stackWeights[T]
	rowCap, posCap int   // the rows and positions selfK and selfV have room for
	selfK, selfV   [][]T // per block: (rowCap, posCap, D), row r's position t at (r·posCap + t)·D
	spareK, spareV [][]T // the same shapes, where Reorder gathers rows that move out of order; nil until needed

	// Scratch of Step, rowCap rows.
	x, h, q, ctx    []T            // (rows, D): the residual stream, a layer norm's output, queries, the heads' contexts
	mean, rstd      []T            // (rows): a layer norm's statistics (unread)
	hidden          []T            // (rows, F): the feed-forward layer's inner activations
	att             []T            // (rows, NH, max(positions, S)): the heads' attention weights
	selfLen, srcLen []int          // (rows): each row's self-attention keys (its position + 1) and source length
	crossK, crossV  [][]T          // (rows): each row's cross-attention keys and values in the block stepped
	sinusoids       []T            // the sinusoidal encodings of the positions reached so far, D each
	self, cross     block.Cache[T] // the step's attentions, over the caches above
	ffn             block.FeedForward[T]
	block           block.BlockCache[T] // the step's decoder block
}

// source is a memory and, per decoder block, its sentences' cross-attention keys and values (mem.Rows, S, D).
type source[T kernels.Float] struct {
	mem  *Memory[T]
	k, v [][]T
}

// row is what a row of a state decodes: sentence sent of src, of which it has decoded pos positions.
type row[T kernels.Float] struct {
	src       *source[T]
	sent, pos int
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
	st := &State[T]{Rows: mem.Rows, rows: make([]row[T], mem.Rows), d: d, ff: m.Cfg.FF, heads: m.Cfg.Heads,
		w: m.weightsOf(true, param.Data(m.decoderTensors()))}
	src := &source[T]{mem: mem}
	for r := range st.rows {
		st.rows[r] = row[T]{src: src, sent: r}
	}
	for _, b := range st.w.blocks {
		k, v := make([]T, n*d), make([]T, n*d)
		// K = mem W_K + b_K;  V = mem W_V + b_V  over every position of every sentence
		block.Project(m.attention(), b.Cross.KW, b.Cross.KB, mem.States, n, d, k, d)
		block.Project(m.attention(), b.Cross.VW, b.Cross.VB, mem.States, n, d, v, d)
		src.k, src.v = append(src.k, k), append(src.v, v)
	}
	st.selfK, st.selfV = make([][]T, len(m.Dec)), make([][]T, len(m.Dec))
	st.fit(mem.Rows, 0, 0)
	return st
}

// Join appends, after st's rows, row r of src for each r of rows (a row may be joined more than once): src is a
// state of the same model that has not stepped, whose rows then take their first step in st.
func (st *State[T]) Join(src *State[T], rows []int) {
	st.fit(st.Rows+len(rows), 0, 0)
	for _, r := range rows {
		if src.rows[r].pos != 0 {
			panic(fmt.Sprintf("transformer: Join of a row %d positions into its sentence", src.rows[r].pos))
		}
		st.rows = append(st.rows, src.rows[r])
	}
	st.Rows = len(st.rows)
}

// SrcLen is the padded source length of st's rows: the longest of their memories' (each Memory.SrcLen), the
// length of each row of Step's weights.
func (st *State[T]) SrcLen() int {
	s := 0
	for _, w := range st.rows {
		s = max(s, w.src.mem.SrcLen)
	}
	return s
}

// Step decodes one position for every row: prev[r] is row r's previous word (BOS at its first step); it writes
// logits (rows × V_tgt) and weights (rows × st.SrcLen()): the cross-attention of decoder block
// m.Cfg.AttentionLayer, averaged over its heads or its head m.Cfg.AlignmentHead alone (0 past the row's source
// length). A step costs one position, not the whole prefix: it is the decoder's forward pass
// (block.BlockCache.Forward) over the cached keys and values.
func (m *Model[T]) Step(st *State[T], prev []int, logits, weights []T) {
	n, d, s := st.Rows, m.Cfg.Dim, st.SrcLen()
	if len(prev) != n || len(logits) < n*m.Cfg.TgtVocab || len(weights) < n*s {
		panic(fmt.Sprintf("transformer: Step of %d rows got %d words, %d logits and %d weights", n, len(prev), len(logits), len(weights)))
	}
	lk, first := 0, math.MaxInt // the self-attention's keys: the positions of the row furthest on, and this one
	for _, w := range st.rows {
		lk, first = max(lk, w.pos+1), min(first, w.pos+1)
	}
	st.fit(n, lk, s)      // before taking st.selfLen, which fit may replace
	selfLen := st.selfLen // nil when every row is at the same position
	if first == lk {
		selfLen = nil
	}
	for r, w := range st.rows {
		st.selfLen[r], st.srcLen[r] = w.pos+1, w.src.mem.Lengths[w.sent]
	}
	x, h := st.x[:n*d], st.h[:n*d]
	m.embedStep(st, x, prev, lk)
	for l := range m.Dec {
		// the decoder's block, in place: y += SelfAttn(LN1(y)), its keys and values of each row's position added
		// to the cache;  y += CrossAttn(LN2(y), mem);  y += FFN(LN3(y))
		self := m.stepAttention(st, &st.self, lk, selfLen)
		self.K, self.V, self.KeyStride = st.selfK[l], st.selfV[l], st.posCap*d
		for r, w := range st.rows {
			at := w.sent * w.src.mem.SrcLen * d
			st.crossK[r], st.crossV[r] = w.src.k[l][at:], w.src.v[l][at:]
		}
		cross := m.stepAttention(st, &st.cross, s, st.srcLen)
		cross.RowK, cross.RowV = st.crossK[:n], st.crossV[:n]
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
	for r := range st.rows {
		st.rows[r].pos++
	}
}

// embedStep writes into x (rows, D) the decoder's input at each row's position t: √D · E_tgt[prev[r]] + P_t,
// the sinusoidal positions computed when a row first reaches t (lk positions: the furthest row's).
func (m *Model[T]) embedStep(st *State[T], x []T, prev []int, lk int) {
	d := m.Cfg.Dim
	for k := len(st.sinusoids) / d; m.TgtPos == nil && k < lk; k++ {
		st.sinusoids = append(st.sinusoids, make([]T, d)...)
		Position(st.sinusoids[k*d:], k)
	}
	e := embedding[T]{table: st.w.emb, pos: st.w.pos, dim: d}
	for r, w := range prev {
		e.word(x[r*d:(r+1)*d], w, st.rows[r].pos, st.sinusoids)
	}
}

// stepAttention sets c up as the step's attention of the rows' queries (one position each) over lk keys, row r's
// first keyLen[r] (nil: all lk), in the state's scratch; the caller says where the keys are.
func (m *Model[T]) stepAttention(st *State[T], c *block.Cache[T], lk int, keyLen []int) *block.Cache[T] {
	n, d := st.Rows, m.Cfg.Dim
	*c = block.Cache[T]{Attention: m.attention(), Rows: n, Lq: 1, Lk: lk, Q: st.q[:n*d], Ctx: st.ctx[:n*d], LdK: d,
		Att: st.att[:n*m.Cfg.Heads*lk]}
	if keyLen != nil {
		c.KeyLen = keyLen[:n]
	}
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
	if n > st.rowCap {
		st.grow(max(n, 2*st.rowCap), st.posCap)
	}
	rows := st.spareRows[:0]
	for _, f := range from {
		rows = append(rows, st.rows[f])
	}
	clear(st.rows) // the rows that left let go of their memories
	st.rows, st.spareRows, st.Rows = rows, st.rows[:0], n
	stride := st.posCap * st.d // rows apart in the caches
	if inPlace {
		for l := range st.selfK {
			for r, f := range from {
				if f != r {
					copyRow(st.selfK[l], st.selfK[l], r, f, stride, rows[r].pos*st.d)
					copyRow(st.selfV[l], st.selfV[l], r, f, stride, rows[r].pos*st.d)
				}
			}
		}
		return
	}
	if st.spareK == nil || len(st.spareK[0]) < len(st.selfK[0]) {
		st.spareK, st.spareV = make([][]T, len(st.selfK)), make([][]T, len(st.selfK))
		for l := range st.spareK {
			st.spareK[l], st.spareV[l] = make([]T, len(st.selfK[l])), make([]T, len(st.selfK[l]))
		}
	}
	for l := range st.selfK {
		for r, f := range from {
			copyRow(st.spareK[l], st.selfK[l], r, f, stride, rows[r].pos*st.d)
			copyRow(st.spareV[l], st.selfV[l], r, f, stride, rows[r].pos*st.d)
		}
	}
	st.selfK, st.spareK = st.spareK, st.selfK
	st.selfV, st.spareV = st.spareV, st.selfV
}

// copyRow copies the first used values of row from of src into row to of dst, rows stride values apart.
func copyRow[T kernels.Float](dst, src []T, to, from, stride, used int) {
	copy(dst[to*stride:to*stride+used], src[from*stride:from*stride+used])
}

// fit makes room in the caches and scratch for rows rows (doubling the rows when they run out), positions
// positions (doubling the positions) and sources of srcLen positions, keeping what the caches hold.
func (st *State[T]) fit(rows, positions, srcLen int) {
	if rows > st.rowCap || positions > st.posCap {
		rowCap, posCap := st.rowCap, st.posCap
		if rows > rowCap {
			rowCap = max(rows, 2*rowCap)
		}
		if positions > posCap {
			posCap = max(positions, 2*posCap, minPositions)
		}
		st.grow(rowCap, posCap)
	}
	if need := st.rowCap * st.heads * max(st.posCap, srcLen); len(st.att) < need {
		st.att = make([]T, need)
	}
}

// grow lays the caches out for rowCap rows of posCap positions, keeping the positions decoded so far of the
// current rows, and sizes the scratch for as many rows.
func (st *State[T]) grow(rowCap, posCap int) {
	d := st.d
	for l := range st.selfK {
		k, v := make([]T, rowCap*posCap*d), make([]T, rowCap*posCap*d)
		for r, w := range st.rows {
			copy(k[r*posCap*d:][:w.pos*d], st.selfK[l][r*st.posCap*d:][:w.pos*d])
			copy(v[r*posCap*d:][:w.pos*d], st.selfV[l][r*st.posCap*d:][:w.pos*d])
		}
		st.selfK[l], st.selfV[l] = k, v
	}
	st.spareK, st.spareV = nil, nil
	st.rowCap, st.posCap = rowCap, posCap
	st.x, st.h, st.q, st.ctx = make([]T, rowCap*d), make([]T, rowCap*d), make([]T, rowCap*d), make([]T, rowCap*d)
	st.hidden = make([]T, rowCap*st.ff)
	st.mean, st.rstd = make([]T, rowCap), make([]T, rowCap)
	st.selfLen, st.srcLen = make([]int, rowCap), make([]int, rowCap)
	st.crossK, st.crossV = make([][]T, rowCap), make([][]T, rowCap)
	st.sinusoids = slices.Grow(st.sinusoids, posCap*d-len(st.sinusoids))
}
