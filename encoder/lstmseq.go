package encoder

import (
	"fmt"

	"github.com/attend-nmt/attend/kernels"
)

// LSTMSeq runs one direction of an LSTM over a whole padded, time-major batch and keeps what its backward pass
// reads. Positions at or past a row's length leave that row's state unchanged, so the forward direction ends
// on each row's last word and the reverse direction starts there.
//
// Shapes: x (steps, rows, in), inputW (4, in, H), hiddenW (4, H, H), bias (4, H); out (steps, rows, H) holds the
// state after each position; finalH, finalC (rows, H) the state after the last position processed.
type LSTMSeq[T kernels.Float] struct {
	Steps, Rows, In, Hidden int
	Reverse                 bool
	act                     []T // (steps, rows, 4H): σ(i), σ(f), tanh(g), σ(o) at each position
	cPrev, hPrev            []T // (steps, rows, H): state before each position
	tanhC                   []T // (steps, rows, H): tanh of the new cell state
	dGates                  []T // (steps, rows, 4H): backward scratch
	h, c, dh, dc            []T // (rows, H) running state / gradient
	arena                   *kernels.Arena[T]
	name                    string
}

// NewLSTMSeq prepares one shape; its buffers come from arena under names starting with name, taken afresh
// by every Forward (so ops of other shapes can share them between runs).
func NewLSTMSeq[T kernels.Float](steps, rows, in, hidden int, reverse bool, arena *kernels.Arena[T], name string) *LSTMSeq[T] {
	return &LSTMSeq[T]{Steps: steps, Rows: rows, In: in, Hidden: hidden, Reverse: reverse, arena: arena, name: name}
}

func (s *LSTMSeq[T]) buffers() {
	n, hid, a := s.Steps*s.Rows, s.Hidden, s.arena
	s.act, s.dGates = a.Get(s.name+".act", n*4*hid), a.Get(s.name+".dGates", n*4*hid)
	s.cPrev, s.hPrev, s.tanhC = a.Get(s.name+".cPrev", n*hid), a.Get(s.name+".hPrev", n*hid), a.Get(s.name+".tanhC", n*hid)
	s.h, s.c = a.Get(s.name+".h", s.Rows*hid), a.Get(s.name+".c", s.Rows*hid)
	s.dh, s.dc = a.Get(s.name+".dh", s.Rows*hid), a.Get(s.name+".dc", s.Rows*hid)
}

func (s *LSTMSeq[T]) position(k int) int {
	if s.Reverse {
		return s.Steps - 1 - k
	}
	return k
}

// Forward computes out, finalH and finalC from x; lengths are the rows' real lengths.
func (s *LSTMSeq[T]) Forward(x, inputW, hiddenW, bias []T, lengths []int, out, finalH, finalC []T) {
	rows, hid, n := s.Rows, s.Hidden, s.Steps*s.Rows
	if len(x) != n*s.In || len(out) != n*hid || len(lengths) != rows {
		panic(fmt.Sprintf("encoder: LSTMSeq.Forward: x %d, out %d, lengths %d for %d×%d×%d", len(x), len(out), len(lengths), s.Steps, rows, s.In))
	}
	s.buffers()
	// Input projections of every position at once: one large GEMM per gate instead of one small one per step.
	kernels.Project(x, n, s.In, inputW, 4, hid, s.act, false)
	clear(s.h)
	clear(s.c)
	for k := 0; k < s.Steps; k++ {
		t := s.position(k)
		gates := s.act[t*rows*4*hid : (t+1)*rows*4*hid]
		copy(s.hPrev[t*rows*hid:(t+1)*rows*hid], s.h)
		copy(s.cPrev[t*rows*hid:(t+1)*rows*hid], s.c)
		kernels.Project(s.h, rows, hid, hiddenW, 4, hid, gates, true)
		kernels.AddBias(gates, rows, 4*hid, bias)
		hNew, cNew := s.arena.Get(s.name+".hNew", rows*hid), s.arena.Get(s.name+".cNew", rows*hid)
		kernels.LSTMForward(gates, s.c, rows, hid, hNew, cNew, s.tanhC[t*rows*hid:(t+1)*rows*hid])
		for r := 0; r < rows; r++ {
			if t < lengths[r] {
				copy(s.h[r*hid:(r+1)*hid], hNew[r*hid:(r+1)*hid])
				copy(s.c[r*hid:(r+1)*hid], cNew[r*hid:(r+1)*hid])
			}
		}
		copy(out[t*rows*hid:(t+1)*rows*hid], s.h)
	}
	copy(finalH, s.h)
	copy(finalC, s.c)
}

// Backward adds the gradients of the weights into dInputW, dHiddenW, dBias and writes the gradient of x into dx,
// given the gradients of out, finalH and finalC. It reads what the last Forward kept.
func (s *LSTMSeq[T]) Backward(x, inputW, hiddenW []T, lengths []int, dOut, dFinalH, dFinalC []T, dx, dInputW, dHiddenW, dBias []T) {
	rows, hid, n := s.Rows, s.Hidden, s.Steps*s.Rows
	copy(s.dh, dFinalH)
	copy(s.dc, dFinalC)
	for k := s.Steps - 1; k >= 0; k-- {
		t := s.position(k)
		// out[t] is the state after position t, so its gradient joins dh here.
		for i, g := range dOut[t*rows*hid : (t+1)*rows*hid] {
			s.dh[i] += g
		}
		dG := s.dGates[t*rows*4*hid : (t+1)*rows*4*hid]
		act := s.act[t*rows*4*hid : (t+1)*rows*4*hid]
		for r := 0; r < rows; r++ {
			d := dG[r*4*hid : (r+1)*4*hid]
			if t >= lengths[r] { // the state passed through unchanged: so does its gradient
				clear(d)
				continue
			}
			kernels.LSTMBackward(act[r*4*hid:(r+1)*4*hid], s.tanhC[(t*rows+r)*hid:(t*rows+r+1)*hid],
				s.cPrev[(t*rows+r)*hid:(t*rows+r+1)*hid], s.dh[r*hid:(r+1)*hid], s.dc[r*hid:(r+1)*hid], 1, hid, d)
		}
		// dhPrev = dGates · W_hhᵀ on updated rows; untouched (pass-through) on the others.
		for r := 0; r < rows; r++ {
			if t < lengths[r] {
				clear(s.dh[r*hid : (r+1)*hid])
			}
		}
		for gate := 0; gate < 4; gate++ {
			kernels.Gemm(false, true, rows, hid, hid, 1, dG[gate*hid:], 4*hid, hiddenW[gate*hid*hid:(gate+1)*hid*hid], hid, 1, s.dh, hid)
		}
	}
	// Weight gradients over all positions at once: dW_hh[g] += hPrevᵀ dG_g, dW_ih[g] += xᵀ dG_g, db += Σ dG.
	for gate := 0; gate < 4; gate++ {
		kernels.Gemm(true, false, hid, hid, n, 1, s.hPrev, hid, s.dGates[gate*hid:], 4*hid, 1, dHiddenW[gate*hid*hid:(gate+1)*hid*hid], hid)
		kernels.Gemm(true, false, s.In, hid, n, 1, x, s.In, s.dGates[gate*hid:], 4*hid, 1, dInputW[gate*s.In*hid:(gate+1)*s.In*hid], hid)
		beta := T(1)
		if gate == 0 {
			beta = 0
		}
		// dx = Σ_g dG_g · W_ih[g]ᵀ
		kernels.Gemm(false, true, n, s.In, hid, 1, s.dGates[gate*hid:], 4*hid, inputW[gate*s.In*hid:(gate+1)*s.In*hid], hid, beta, dx, s.In)
	}
	kernels.AddColumnSums(dBias, s.dGates, n, 4*hid)
}
