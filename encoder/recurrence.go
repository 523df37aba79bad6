package encoder

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// Letters in this file: S steps (source positions), B rows, I the input width, H hidden units, G gates (4 for an
// LSTM, 3 for a GRU).

// recurrence runs one direction of a recurrent layer (LSTM or GRU) over a padded, time-major batch: the one
// forward pass that inference (Encoder.Forward) and the fused training op (fusedDirection) share, and its
// backward pass. Positions at or past a row's length leave that row's state unchanged, so the forward direction
// ends on each row's last word and the reverse direction starts there.
//
// Shapes: x (S, B, I); weights as dirWeights; states (S, B, H) the state after each position; finalH, finalC
// (B, H) the state after the last position processed (a GRU's finalC is its finalH).
type recurrence[T kernels.Float] struct {
	cell                    Cell
	steps, rows, in, hidden int
	reverse                 bool
	// gates is the LSTM's (S, B, 4H): x·W_ih for every position, computed at once, to which each step adds b and
	// h·W_hh and which LSTMForward then activates in place, so that after a forward pass it holds every position's
	// activations (what the backward pass reads); hiddenGM is W_hh laid out gate-major, (H, 4H), so that h·W_hh is
	// one product. A GRU's gx and gh (B, 3H) are one step's input and hidden parts.
	gates, hiddenGM []T
	// hiddenPacked is hiddenGM packed for inference's products (kernels.PackForSteps), or nil: BLAS's.
	hiddenPacked     kernels.WeightProduct
	gx, gh           []T
	h, c, hNew, cNew []T // (B, H)
	get              func(name string, n int) []T
	mul              *kernels.Multiplier // a training worker's, or nil: backward's weight gradients on its AMXProduct
}

// recCache is what a direction's forward pass keeps for its backward pass, for every position (time-major):
// besides the LSTM's activations, which stay in recurrence.gates.
type recCache[T kernels.Float] struct {
	hPrev, cPrev []T // (S, B, H): the state before each position (cPrev: LSTM only)
	tanhC        []T // (S, B, H): LSTM, tanh of the new cell state
	gh, act      []T // (S, B, 3H): GRU, the hidden part of the pre-activations, and r, z, n
}

// dirWeights are one direction's weights (or their gradients) as slices: W_ih (G, I, H), W_hh (G, H, H), the
// bias (G, H) and, for a GRU, the hidden bias b_hh (G, H).
type dirWeights[T kernels.Float] struct {
	inputW, hiddenW, bias, hiddenBias []T
}

func (d Direction[T]) weights() dirWeights[T] {
	w := dirWeights[T]{inputW: d.InputW.Data, hiddenW: d.HiddenW.Data, bias: d.Bias.Data}
	if d.HiddenBias != nil {
		w.hiddenBias = d.HiddenBias.Data
	}
	return w
}

// newRecurrence prepares one shape. Its buffers come from arena under names starting with name (taken afresh by
// every forward pass), or are allocated when arena is nil; mul (nil: none) is the multiplier of its products.
func newRecurrence[T kernels.Float](cell Cell, steps, rows, in, hidden int, reverse bool, arena *kernels.Arena[T], mul *kernels.Multiplier, name string) *recurrence[T] {
	get := func(string, int) []T { return nil }
	if arena == nil {
		get = func(_ string, n int) []T { return make([]T, n) }
	} else {
		get = func(part string, n int) []T { return arena.Get(name+"."+part, n) }
	}
	return &recurrence[T]{cell: cell, steps: steps, rows: rows, in: in, hidden: hidden, reverse: reverse, get: get, mul: mul}
}

// newCache takes the buffers of a cache for the recurrence's shape.
func (s *recurrence[T]) newCache() *recCache[T] {
	n := s.steps * s.rows * s.hidden
	c := &recCache[T]{hPrev: s.get("hPrev", n)}
	if s.cell == GRU {
		c.gh, c.act = s.get("ghAll", 3*n), s.get("act", 3*n)
	} else {
		c.cPrev, c.tanhC = s.get("cPrev", n), s.get("tanhC", n)
	}
	return c
}

// position is the source position of the k-th step.
func (s *recurrence[T]) position(k int) int {
	if s.reverse {
		return s.steps - 1 - k
	}
	return k
}

// forward computes states, finalH and finalC from x; lengths are the rows' real lengths. With cache not nil it
// keeps there what backward reads; inference passes nil.
func (s *recurrence[T]) forward(w dirWeights[T], x []T, lengths []int, states, finalH, finalC []T, cache *recCache[T]) {
	S, B, I, H := s.steps, s.rows, s.in, s.hidden
	if len(x) != S*B*I || len(states) != S*B*H || len(lengths) != B || len(finalH) != B*H || len(finalC) != B*H {
		panic(fmt.Sprintf("encoder: recurrence forward got x %d, states %d, lengths %d, finals %d, %d for S=%d B=%d I=%d H=%d",
			len(x), len(states), len(lengths), len(finalH), len(finalC), S, B, I, H))
	}
	s.h, s.c, s.hNew, s.cNew = s.get("h", B*H), s.get("c", B*H), s.get("hNew", B*H), s.get("cNew", B*H)
	clear(s.h)
	clear(s.c)
	if s.cell == LSTM {
		// Input projections of every position at once: one large product per gate instead of one small one per step.
		s.gates, s.hiddenGM = s.get("gates", S*B*4*H), s.get("hiddenGM", H*4*H)
		kernels.Project(x, S*B, I, w.inputW, 4, H, s.gates, false)
		kernels.GateMajor(w.hiddenW, 4, H, H, s.hiddenGM)
		s.hiddenPacked = nil
		if cache == nil { // inference: h·W_hh on the weights packed once for every step, where that beats BLAS
			s.hiddenPacked = kernels.PackForSteps(s.hiddenGM, H, 4*H)
		}
	} else {
		s.gx, s.gh = s.get("gx", B*3*H), s.get("gh", B*3*H)
	}
	for k := 0; k < S; k++ {
		t := s.position(k)
		at := func(buf []T, width int) []T { // position t of a (S, B, width) buffer
			if buf == nil {
				return nil
			}
			return buf[t*B*width : (t+1)*B*width]
		}
		if cache != nil {
			copy(at(cache.hPrev, H), s.h)
			if s.cell == LSTM {
				copy(at(cache.cPrev, H), s.c)
			}
		}
		if s.cell == LSTM {
			// gates = x_t·W_ih (above) + b + h·W_hh, then the pointwise step.
			gates := at(s.gates, 4*H)
			kernels.AddBias(gates, B, 4*H, w.bias)
			if s.hiddenPacked != nil {
				s.hiddenPacked.Mul(any(s.h).([]float32), B, H, any(gates).([]float32), 4*H, true)
			} else {
				kernels.Gemm(false, false, B, 4*H, H, 1, s.h, H, s.hiddenGM, 4*H, 1, gates, 4*H)
			}
			var tanhC []T
			if cache != nil {
				tanhC = at(cache.tanhC, H)
			}
			kernels.LSTMForward(gates, s.c, B, H, s.hNew, s.cNew, tanhC)
		} else {
			// gx = x_t·W_ih + b_ih, gh = h·W_hh + b_hh, then the pointwise step.
			gh, act := s.gh, []T(nil)
			if cache != nil {
				gh, act = at(cache.gh, 3*H), at(cache.act, 3*H)
			}
			kernels.Project(x[t*B*I:(t+1)*B*I], B, I, w.inputW, 3, H, s.gx, false)
			kernels.AddBias(s.gx, B, 3*H, w.bias)
			kernels.Project(s.h, B, H, w.hiddenW, 3, H, gh, false)
			kernels.AddBias(gh, B, 3*H, w.hiddenBias)
			kernels.GRUForward(s.gx, gh, s.h, B, H, s.hNew, act)
			copy(s.cNew, s.hNew)
		}
		for r := 0; r < B; r++ {
			if t < lengths[r] {
				copy(s.h[r*H:(r+1)*H], s.hNew[r*H:(r+1)*H])
				copy(s.c[r*H:(r+1)*H], s.cNew[r*H:(r+1)*H])
			}
		}
		copy(at(states, H), s.h)
	}
	copy(finalH, s.h)
	copy(finalC, s.c)
}

// backward adds the gradients of the weights into dw and writes the gradient of x into dx, given the gradients of
// states, finalH and finalC, reading what the last forward pass kept in cache.
func (s *recurrence[T]) backward(w dirWeights[T], x []T, lengths []int, cache *recCache[T], dStates, dFinalH, dFinalC, dx []T, dw dirWeights[T]) {
	S, B, I, H := s.steps, s.rows, s.in, s.hidden
	G := s.cell.Gates()
	dh, dc := s.get("dh", B*H), s.get("dc", B*H)
	dGates := s.get("dGates", S*B*G*H) // LSTM: dL/d(pre-activations); GRU: dL/dgx
	var dGh []T                        // GRU: dL/dgh, (S, B, 3H)
	copy(dh, dFinalH)
	if s.cell == LSTM {
		copy(dc, dFinalC)
	} else {
		dGh = s.get("dGh", S*B*3*H)
		for i, g := range dFinalC { // forward: finalC = finalH
			dh[i] += g
		}
	}
	for k := S - 1; k >= 0; k-- {
		t := s.position(k)
		// states[t] is the state after position t, so its gradient joins dh here.
		for i, g := range dStates[t*B*H : (t+1)*B*H] {
			dh[i] += g
		}
		dG := dGates[t*B*G*H : (t+1)*B*G*H]
		for r := 0; r < B; r++ {
			rowG, rowH := dG[r*G*H:(r+1)*G*H], (t*B+r)*H
			if t >= lengths[r] { // the state passed through unchanged: so does its gradient
				clear(rowG)
				if dGh != nil {
					clear(dGh[(t*B+r)*3*H : (t*B+r+1)*3*H])
				}
				continue
			}
			if s.cell == LSTM {
				kernels.LSTMBackward(s.gates[(t*B+r)*4*H:(t*B+r+1)*4*H], cache.tanhC[rowH:rowH+H], cache.cPrev[rowH:rowH+H],
					dh[r*H:(r+1)*H], dc[r*H:(r+1)*H], 1, H, rowG)
				clear(dh[r*H : (r+1)*H]) // refilled below from the gates
			} else {
				// leaves z·dh in dh; the part through gh is added below
				kernels.GRUBackward(cache.act[(t*B+r)*3*H:(t*B+r+1)*3*H], cache.gh[(t*B+r)*3*H:(t*B+r+1)*3*H], cache.hPrev[rowH:rowH+H],
					dh[r*H:(r+1)*H], 1, H, rowG, dGh[(t*B+r)*3*H:(t*B+r+1)*3*H])
			}
		}
		// forward: the gates read h_{t-1} through W_hh, so dh_{t-1} += dG · W_hhᵀ (0 on pass-through rows)
		if s.cell == LSTM {
			kernels.Gemm(false, true, B, H, 4*H, 1, dG, 4*H, s.hiddenGM, 4*H, 1, dh, H)
		} else {
			for g := 0; g < 3; g++ {
				kernels.Gemm(false, true, B, H, H, 1, dGh[t*B*3*H+g*H:], 3*H, w.hiddenW[g*H*H:(g+1)*H*H], H, 1, dh, H)
			}
		}
	}
	// Weight gradients over all positions at once: dW_ih[g] += xᵀ dG_g, dW_hh[g] += hPrevᵀ dG_g (GRU: dGh_g), on
	// AMX split (bfloat16x3) where the multiplier's products are; the biases' column sums, and dx = Σ_g dG_g W_ih[g]ᵀ.
	n := S * B
	amx := s.mul.AMXProduct("enc.dW")
	hiddenIn := kernels.GateInput[T]{X: cache.hPrev, LDX: H, M: H, DW: dw.hiddenW}
	input := kernels.GateInput[T]{X: x, LDX: I, M: I, DW: dw.inputW}
	if dGh != nil {
		kernels.GateGradients(amx, n, G, H, dGh, G*H, hiddenIn)
		kernels.GateGradients(amx, n, G, H, dGates, G*H, input)
	} else {
		kernels.GateGradients(amx, n, G, H, dGates, G*H, hiddenIn, input)
	}
	for g := 0; g < G; g++ {
		beta := T(1)
		if g == 0 {
			beta = 0
		}
		kernels.Gemm(false, true, n, I, H, 1, dGates[g*H:], G*H, w.inputW[g*I*H:(g+1)*I*H], H, beta, dx, I)
	}
	kernels.AddColumnSums(dw.bias, dGates, n, G*H)
	if dGh != nil {
		kernels.AddColumnSums(dw.hiddenBias, dGh, n, 3*H)
	}
}
