package kernels

import (
	"math"
	"sync"
)

// OutputTeam shares the output layer's vocabulary out between training's workers: while a team is on (Begin),
// each of its members' calls of OutputXent, one each, at once on goroutines of their own, takes every member's
// rows through its own share of the words, instead of its own rows through every word. Each core then streams
// half the output layer's weights (packed once for its share) rather than all of them, which is what bounds the
// layer's products (BenchmarkOutputXentWorkers: 1.1× the rows' split). The calls meet at a barrier once the
// chunks' operands are rounded (each member rounds every P-th chunk for all), after each chunk's logits, to
// combine the rows' softmax sums, and at the end, to add up each row's dx.
//
// A member's dw and db hold the columns of its share of the words (the sums over every member's rows) and zeros
// elsewhere, so that adding the members' gradients gives the whole layer's; its dx and loss are its own rows',
// as without a team. The sums run in another order than one AMXOutput's over all rows: the figures differ in
// float32's last bits.
//
// The AMXOutputs made together (NewAMXOutputs) share one OutputTeam (AMXOutput.Team).
type OutputTeam struct {
	packs   *amxOutputPacks
	members []*AMXOutput // the members of the team that is on, by rank; none when off

	mu      sync.Mutex
	cond    sync.Cond
	arrived int  // members waiting at the barrier
	round   int  // barriers passed since Begin
	aborted bool // a member will not come (Abort)

	calls   []teamCall    // each member's call, by rank
	stats   []teamStats   // each member's rows' sums over its share of the words, by rank
	parts   [][]float32   // members 1…: their shares of every row's dx (rows, in)
	shares  []outputPack  // each member's share of the weights packed, in the storage of the whole layer's packings
	rounded [][]teamChunk // the chunks' operands, by the rank that rounds them: chunk c is rounded[c%P][c/P]
}

// teamChunk is a chunk of the team's rows rounded (or split) for AMX once for every member: x (rows, in), the left
// operand of the logits, and xᵀ (in, rows), the left operand of dw.
type teamChunk struct{ x, xt amxA }

// teamCall is what a member's call of OutputXent brings to the team: its rows and where their dx goes.
type teamCall struct {
	x       []float32
	targets []int
	rows    int
	dx      []float32
}

// teamStats are a member's sums over its share of the words for every row of the team (rows of member 0 first):
// the logits' maximum, the sum of their exps shifted by it, their sum (with label smoothing) and the target's
// logit when the target is in its share (0 otherwise).
type teamStats struct {
	max       []float32
	sum, zsum []float64
	zy        []float64
}

// rows fills in the stats of the rows of g (len(targets) rows of len(b) logits, the team's rows at, at+1, …):
// for each row whose target is not pad, it adds b, sums the row (when smoothed), keeps the logit of its target
// if that falls in the share of the words that starts at word lo, and turns the row into exp(z − max) with its
// maximum and sum (expShiftedGroup, five rows side by side). A pad row's stats are zeros and its logits are left.
func (st *teamStats) rows(g, b []float32, targets []int, pad, lo, at int, smoothed bool) {
	words := len(b)
	for i := range targets {
		st.max[at+i], st.sum[at+i], st.zsum[at+i], st.zy[at+i] = 0, 0, 0, 0
	}
	if words == 0 {
		return
	}
	biasedGroups(g, b, targets, pad, func(int, []float32) {}, func(group *[5][]float32, n int, index *[5]int) {
		var zsum, sum [5]float64
		var maxv [5]float32
		for k, i := range index[:n] {
			if y := targets[i]; y >= lo && y < lo+words {
				st.zy[at+i] = float64(group[k][y-lo])
			}
		}
		if smoothed {
			addSideBySide(&zsum, group, n)
		}
		expShiftedGroup(group, group, n, &maxv, &sum)
		for k, i := range index[:n] {
			st.max[at+i], st.sum[at+i], st.zsum[at+i] = maxv[k], sum[k], zsum[k]
		}
	})
}

// outputPack is a share of the output layer's weights packed both ways.
type outputPack struct{ w, wt amxPack }

// Team returns the OutputTeam of the AMXOutputs made together with s (NewAMXOutputs).
func (s *AMXOutput) Team() *OutputTeam { return s.weights.team }

// Begin turns the team on for members, AMXOutputs made together, in rank order: each must then call OutputXent
// once, on a goroutine of its own, before End. With fewer than two members the team stays off and each call runs
// alone. Call it while none of them is in use.
func (t *OutputTeam) Begin(members []*AMXOutput) {
	if len(members) < 2 {
		return
	}
	t.members = append(t.members[:0], members...)
	for r, s := range members {
		if s.weights != t.packs {
			panic("kernels: OutputTeam.Begin with an AMXOutput made apart")
		}
		s.rank = r
	}
	t.arrived, t.round, t.aborted = 0, 0, false
	for len(t.calls) < len(members) {
		t.calls = append(t.calls, teamCall{})
		t.stats = append(t.stats, teamStats{})
		t.parts = append(t.parts, nil)
		t.rounded = append(t.rounded, nil)
	}
	for len(t.shares) < len(members) {
		t.shares = append(t.shares, outputPack{})
	}
}

// Abort releases the members waiting at a barrier for one that will not come (its graph failed before its
// call): their calls return NaN, and the step must be thrown away. It may be called from any goroutine.
func (t *OutputTeam) Abort() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.aborted = true
	t.cond.Broadcast()
}

// End turns the team off, after every member's call has returned.
func (t *OutputTeam) End() { t.members = t.members[:0] }

// teamOn reports whether s is a member of its team while the team is on.
func (s *AMXOutput) teamOn() bool {
	t := s.Team()
	return len(t.members) > 1 && s.rank < len(t.members) && t.members[s.rank] == s
}

// wait is the team's barrier: it returns when every member has reached it, true, or when the team is aborted,
// false.
func (t *OutputTeam) wait() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.aborted {
		return false
	}
	round := t.round
	t.arrived++
	if t.arrived == len(t.members) {
		t.arrived = 0
		t.round++
		t.cond.Broadcast()
		return true
	}
	for t.round == round && !t.aborted {
		t.cond.Wait()
	}
	return t.round != round
}

// shareOf returns the columns [lo, hi) of v words that member r of p takes: as even as whole 32s allow (whole
// cache lines of dw), or, with fewer than two 32s a member, as even as can be.
func shareOf(v, p, r int) (lo, hi int) {
	at := func(r int) int {
		switch {
		case r == p:
			return v
		case v < 2*amxBlock*p:
			return r * v / p
		}
		return r * v / p / amxBlock * amxBlock
	}
	return at(r), at(r + 1)
}

// pack returns member r's share of the weights, columns [lo, hi) of w (in, v), packed both ways. The members'
// shares lie side by side in the storage of the whole layer's packings (each share's panels and pair rows take
// whole 32s, as the whole's do, so they fit), so that a team holds one copy of the weights, as AMXOutputs made
// together do without one; a share that does not fit (fewer than two 32s of words a member) gets storage of its
// own.
func (t *OutputTeam) pack(r int, w []float32, in, v, lo, hi int, split bool) (wp, wtp *amxB) {
	members := len(t.members)
	wholes := [2]*amxPack{&t.packs.w, &t.packs.wt}
	q := &t.shares[r]
	for i, p := range [2]*amxPack{&q.w, &q.wt} {
		k, n, rs, cs := in, hi-lo, v, 1 // w's share, (in, words)
		size := func(lo, hi int) int { _, kp := amxSegments(k, split); return amxRoundUp(hi-lo) * kp / 2 }
		if i == 1 { // wᵀ's share, (words, in)
			k, n, rs, cs = hi-lo, in, 1, v
			size = func(lo, hi int) int { _, kp := amxSegments(hi-lo, split); return amxRoundUp(in) * kp / 2 }
		}
		off, total := 0, 0
		for m := range members {
			mlo, mhi := shareOf(v, members, m)
			if m < r {
				off += size(mlo, mhi)
			}
			total += size(mlo, mhi)
		}
		p.mu.Lock()
		// The share starts from an amxB of no shape, so that fit clears its padding, which the whole layer's
		// packing may have written over since.
		p.b = amxB{}
		if store := t.storage(wholes[i], total); off+size(lo, hi) <= len(store) {
			p.b.data = store[off : off+size(lo, hi) : off+size(lo, hi)]
		}
		p.ensure(w[lo:], k, n, rs, cs, split)
		p.mu.Unlock()
	}
	return &q.w.b, &q.wt.b
}

// storage returns the storage of the whole layer's packing whole, grown to at least n values, for the team's
// shares: the whole's packing is then stale (its shape forgotten, so that its next fit clears its padding anew).
func (t *OutputTeam) storage(whole *amxPack, n int) []uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	whole.mu.Lock()
	defer whole.mu.Unlock()
	if cap(whole.b.data) < n {
		whole.b.data = make([]uint32, n)
	}
	whole.b = amxB{data: whole.b.data[:cap(whole.b.data)]}
	whole.current = false
	return whole.b.data
}

// lse is the log-sum-exp of row i of the team's logits over every member's share of the words, from their sums
// (members in rank order, so that every member finds the same figure).
func (t *OutputTeam) lse(i int) float64 {
	m := math.Inf(-1)
	for _, st := range t.stats[:len(t.members)] {
		if st.sum[i] > 0 {
			m = max(m, float64(st.max[i]))
		}
	}
	var sum float64
	for _, st := range t.stats[:len(t.members)] {
		if st.sum[i] > 0 {
			sum += st.sum[i] * math.Exp(float64(st.max[i])-m)
		}
	}
	return m + math.Log(sum)
}

// grow returns s with room for n values, its storage reused when large enough.
func grow[E any](s []E, n int) []E {
	if cap(s) < n {
		return make([]E, n)
	}
	return s[:n]
}

// teamXent is OutputXent for member s of the team that is on (OutputTeam): it publishes its rows, takes every
// member's rows, chunk by chunk, through its share of the words (logits, softmax over the whole vocabulary from
// the members' sums, dw and db of its columns, its share of dx), then adds the other members' shares of dx into
// its rows and returns its rows' loss. NaN: the team was aborted.
func (s *AMXOutput) teamXent(x, w, b []float32, targets []int, pad, n, in, v, chunk int, smoothing float64, dx, dw, db, scratch []float32) float64 {
	t, r := s.weights.team, s.rank
	members := len(t.members)
	t.calls[r] = teamCall{x: x, targets: targets, rows: n, dx: dx}
	clear(dw)
	clear(db)
	lo, hi := shareOf(v, members, r)
	wp, wtp := t.pack(r, w, in, v, lo, hi, s.split)
	if !t.wait() { // every call is published
		return math.NaN()
	}
	first := make([]int, members+1) // the team's row of each member's first row
	for m, c := range t.calls[:members] {
		first[m+1] = first[m] + c.rows
	}
	total, words := first[members], hi-lo
	st := &t.stats[r]
	st.max, st.sum, st.zsum, st.zy = grow(st.max, total), grow(st.sum, total), grow(st.zsum, total), grow(st.zy, total)
	if r > 0 {
		t.parts[r] = grow(t.parts[r], total*in)
	}
	if len(scratch) < chunk*words {
		s.logits = grow(s.logits, chunk*words)
		scratch = s.logits
	}
	// Each member rounds every members-th chunk's x and xᵀ for all of them.
	chunks := 0
	for _, c := range t.calls[:members] {
		chunks += (c.rows + chunk - 1) / chunk
	}
	mine := grow(t.rounded[r], (chunks-r+members-1)/members)
	t.rounded[r] = mine
	ci := 0
	for _, c := range t.calls[:members] {
		for start := 0; start < c.rows; start += chunk {
			if ci%members == r {
				rows, xc := min(chunk, c.rows-start), c.x[start*in:]
				rc := &mine[ci/members]
				rc.x.fit(rows, in, s.split)
				rc.x.round(xc, in, 1)
				rc.xt.fit(in, rows, s.split)
				rc.xt.round(xc, 1, in)
			}
			ci++
		}
	}
	if !t.wait() { // every chunk is rounded
		return math.NaN()
	}
	hit, spread := 1-smoothing, smoothing/float64(v)
	ci = 0
	for m, c := range t.calls[:members] {
		for start := 0; start < c.rows; start += chunk {
			rows, at := min(chunk, c.rows-start), first[m]+start
			g, rc := scratch[:rows*words], &t.rounded[ci%members][ci/members]
			ci++
			if words > 0 {
				mustAMX(s.product(&rc.x, wp, g, words, false))
			}
			st.rows(g, b[lo:hi], c.targets[start:start+rows], pad, lo, at, smoothing != 0)
			if !t.wait() { // every member's sums of the chunk's rows are in
				return math.NaN()
			}
			if words == 0 {
				continue
			}
			// G = softmax − q on the share's columns: exp(z − max) · exp(max − lse), less the smoothed target.
			for i := range rows {
				row, y := g[i*words:(i+1)*words], c.targets[start+i]
				if y == pad {
					clear(row)
					continue
				}
				scale(row, float32(math.Exp(float64(st.max[at+i])-t.lse(at+i))))
				if smoothing != 0 {
					sp := float32(spread)
					for j := range row {
						row[j] -= sp
					}
				}
				if y >= lo && y < hi {
					row[y-lo] -= float32(hit)
				}
			}
			dbs := db[lo:hi]
			for i := range rows {
				Axpy(1, g[i*words:(i+1)*words], dbs)
			}
			// dw[:, lo:hi] += x_cᵀ G;  dx_c (member 0's share, into the rows' own dx; the others' into parts) = G w[:, lo:hi]ᵀ
			s.gb.fit(rows, words, s.split)
			s.gb.round(g, words, 1)
			mustAMX(s.product(&rc.xt, &s.gb, dw[lo:], v, true))
			s.g.fit(rows, words, s.split)
			s.g.round(g, words, 1)
			out := c.dx[start*in:]
			if r > 0 {
				out = t.parts[r][at*in:]
			}
			mustAMX(s.product(&s.g, wtp, out, in, false))
		}
	}
	if !t.wait() { // every share of dx is in
		return math.NaN()
	}
	own := dx[:n*in]
	if lo, hi := shareOf(v, members, 0); lo == hi { // no share of member 0's set the rows' dx (fewer words than members)
		clear(own)
	}
	for q := 1; q < members; q++ {
		if lo, hi := shareOf(v, members, q); lo == hi {
			continue
		}
		Axpy(1, t.parts[q][first[r]*in:(first[r]+n)*in], own)
	}
	var loss float64
	for i, y := range targets[:n] {
		if y == pad {
			continue
		}
		var zy, zsum float64
		for _, st := range t.stats[:members] {
			zy += st.zy[first[r]+i]
			zsum += st.zsum[first[r]+i]
		}
		loss += t.lse(first[r]+i) - hit*zy - spread*zsum
	}
	return loss
}
