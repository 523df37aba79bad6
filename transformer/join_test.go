package transformer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// joinPlan is one memory's part in a running session: its sentences' source lengths, padded to srcLen, the step
// at which they join (0: the session starts on them), and which of its rows join (a row more than once: the
// copies of a sentence that beam search joins).
type joinPlan struct {
	lengths    []int
	srcLen, at int
	rows       []int
}

// joined is what a row of greedyJoined decoded: its hypothesis and its logits of every step, back to back.
type joined[T kernels.Float] struct {
	hyp    decoder.Hypothesis
	logits []T
}

// greedyJoined decodes greedily, in one session of m, the rows of each plan's memory mems[p], which join at the
// plan's step (Join), a running batch: rows that end (</s>, or maxLen words) leave at once (Reorder), and the
// rows left are reversed every other step (Reorder out of order). It checks that the session's SrcLen is the
// longest padded source of its rows and returns each plan's rows' results, in the plan's order, and how many
// plans joined a session that had already stepped rows still decoding.
func greedyJoined[T kernels.Float](t *testing.T, m *Model[T], mems []*Memory[T], plans []joinPlan, maxLen int) ([][]joined[T], int) {
	t.Helper()
	type live struct{ plan, i, steps, prev int } // a row decoding plans[plan].rows[i]
	v, out := m.Cfg.TgtVocab, make([][]joined[T], len(plans))
	var ses decoder.Joiner[T]
	var rows []live
	joins, left := 0, len(plans)
	for step := 0; left > 0 || len(rows) > 0; step++ {
		for p, plan := range plans {
			if plan.at != step {
				continue
			}
			out[p], left = make([]joined[T], len(plan.rows)), left-1
			if src := m.Session(mems[p]); ses == nil {
				ses = src
				ses.Reorder(plan.rows)
			} else {
				if len(rows) > 0 {
					joins++
				}
				ses.Join(src, plan.rows)
			}
			for i := range plan.rows {
				rows = append(rows, live{plan: p, i: i, prev: testBOS})
			}
		}
		if len(rows) == 0 {
			continue
		}
		n, s, want := len(rows), ses.SrcLen(), 0
		prev := make([]int, n)
		for r, row := range rows {
			prev[r], want = row.prev, max(want, plans[row.plan].srcLen)
		}
		if s != want {
			t.Fatalf("step %d: SrcLen %d, the rows' longest padded source %d", step, s, want)
		}
		logits, weights := make([]T, n*v), make([]T, n*s)
		ses.Step(prev, logits, weights)
		var keep []int
		for r := range rows {
			row := &rows[r]
			plan := plans[row.plan]
			got, length := &out[row.plan][row.i], plan.lengths[plan.rows[row.i]]
			l := logits[r*v : (r+1)*v]
			got.logits = append(got.logits, l...)
			attn := make([]float32, length)
			for j, w := range weights[r*s : (r+1)*s] {
				if j < length {
					attn[j] = float32(w)
				} else if w != 0 {
					t.Fatalf("step %d, row %d: weight %g past its source length %d", step, r, w, length)
				}
			}
			got.hyp.Attention = append(got.hyp.Attention, attn)
			best := kernels.Argmax(l)
			row.steps++
			if best == testEOS {
				got.hyp.Finished = true
				continue
			}
			got.hyp.Tokens, row.prev = append(got.hyp.Tokens, best), best
			if row.steps < maxLen {
				keep = append(keep, r)
			}
		}
		if step%2 == 1 {
			slices.Reverse(keep)
		}
		next := make([]live, len(keep))
		for i, r := range keep {
			next[i] = rows[r]
		}
		rows = next
		ses.Reorder(keep)
	}
	return out, joins
}

// sameHypothesis fails t unless got and want have the same words, ending and attention, to the bit.
func sameHypothesis(t *testing.T, name string, got, want decoder.Hypothesis) {
	t.Helper()
	same := slices.Equal(got.Tokens, want.Tokens) && got.Finished == want.Finished && len(got.Attention) == len(want.Attention)
	for i := 0; same && i < len(got.Attention); i++ {
		same = slices.Equal(got.Attention[i], want.Attention[i])
	}
	if !same {
		t.Fatalf("%s: %v (finished %v), want %v (finished %v), or their attention differs", name, got.Tokens, got.Finished, want.Tokens, want.Finished)
	}
}

// joinEOSBias are the </s> biases of testJoinMatchesAlone, per stepConfigs entry: some rows end early, some at
// the length limit.
var joinEOSBias = []float64{1.5, 5}

// testJoinMatchesAlone decodes, in one running session, a batch and then sentences of three other memories that
// join it mid-decode (two with longer padded sources, one with an empty sentence, some sentences several times
// as beams are, the last after every earlier row has ended), and checks each row's logits of every step and
// hypothesis, to the bit, against its sentence decoded in its own memory's session alone, which is decoder.Greedy's.
func testJoinMatchesAlone[T kernels.Float](t *testing.T) {
	for c, cfg := range stepConfigs {
		t.Run(cfg.Positions, func(t *testing.T) {
			const maxLen = 9
			m, _ := newTestModel[T](t, cfg, 41)
			m.OutB.Data[testEOS] += T(joinEOSBias[c])
			plans := []joinPlan{
				{lengths: []int{5, 2, 4}, srcLen: 5, at: 0, rows: []int{0, 1, 2}},
				{lengths: []int{7, 3}, srcLen: 7, at: 1, rows: []int{1, 0, 0}},
				{lengths: []int{1, 0, 2}, srcLen: 2, at: 2, rows: []int{2, 2, 2, 1, 0}},
				{lengths: []int{6, 3}, srcLen: 8, at: 3 * maxLen, rows: []int{1, 0}},
			}
			mems := make([]*Memory[T], len(plans))
			for p, plan := range plans {
				mems[p] = newTestMemory[T](plan.lengths, plan.srcLen, cfg.Dim, uint64(41+p))
			}
			got, joins := greedyJoined(t, m, mems, plans, maxLen)
			if joins != 2 {
				t.Fatalf("%d plans joined rows still decoding, the test needs 2", joins)
			}
			ended, stopped := 0, 0 // rows that ended with </s> before the length limit; at it
			for p, plan := range plans {
				all := make([]int, len(plan.lengths))
				for i := range all {
					all[i] = i
				}
				alone, _ := greedyJoined(t, m, mems[p:p+1], []joinPlan{{lengths: plan.lengths, srcLen: plan.srcLen, rows: all}}, maxLen)
				for g, h := range m.Greedy(mems[p], testBOS, testEOS, maxLen) {
					sameHypothesis(t, fmt.Sprintf("memory %d, sentence %d alone, against Greedy", p, g), alone[0][g].hyp, h)
				}
				for i, g := range plan.rows {
					name := fmt.Sprintf("memory %d, sentence %d (joined row %d)", p, g, i)
					sameHypothesis(t, name, got[p][i].hyp, alone[0][g].hyp)
					if !slices.Equal(got[p][i].logits, alone[0][g].logits) {
						t.Fatalf("%s: the logits differ from its own session's", name)
					}
					if got[p][i].hyp.Finished {
						ended++
					} else {
						stopped++
					}
				}
			}
			if ended < 3 || stopped == 0 {
				t.Fatalf("%d rows ended with </s> and %d at the length limit: the test needs both", ended, stopped)
			}
		})
	}
}

// TestJoinMatchesAlone: a sentence decoded in a running session that others join and leave decodes exactly as in
// its own session, in float64 and float32.
func TestJoinMatchesAlone(t *testing.T) {
	t.Run("float64", testJoinMatchesAlone[float64])
	t.Run("float32", testJoinMatchesAlone[float32])
}

// TestRunningBatchMatchesAlone: decoder.GreedyQueue and decoder.BeamQueue over the Transformer's sessions, a
// running batch of one to three sentences that sentences of different source lengths join one by one, decode
// each sentence as it is decoded alone, to the bit, for longer than the self-attention caches' first positions
// (so the caches grow in a step whose rows are at different positions).
func TestRunningBatchMatchesAlone(t *testing.T) {
	const maxLen = 2*minPositions - 2
	lengths := []int{3, 9, 2, 7, 5, 12, 4, 1, 8, 6, 11, 2}
	beam := decoder.BeamOptions{Width: 3, NBest: 2, MaxLen: maxLen, Alpha: 0.6}
	for c, cfg := range stepConfigs {
		m, _ := newTestModel[float32](t, cfg, 41)
		m.OutB.Data[testEOS] += float32(joinEOSBias[c])
		mems := make([]*Memory[float32], len(lengths))
		for i, l := range lengths {
			mems[i] = newTestMemory[float32]([]int{l}, l, cfg.Dim, uint64(100+i))
		}
		for rows := 1; rows <= 3; rows++ {
			next := 0
			blocks := func() *decoder.Block[float32] {
				if next == len(mems) {
					return nil
				}
				mem := mems[next]
				next++
				return &decoder.Block[float32]{Sessions: []decoder.Session[float32]{m.Session(mem)}, SrcLen: mem.SrcLen,
					Lengths: mem.Lengths, IDs: []int{next - 1}}
			}
			o := decoder.GreedyOptions{Rows: rows, Threads: 1, Vocab: m.Cfg.TgtVocab, BOS: testBOS, EOS: testEOS, MaxLen: maxLen}
			greedy := make([]decoder.Hypothesis, len(mems))
			if err := decoder.GreedyQueue(blocks, func(id int, h decoder.Hypothesis) { greedy[id] = h }, o); err != nil {
				t.Fatal(err)
			}
			next, o.Rows = 0, rows*beam.Width
			lists := make([][]decoder.Scored, len(mems))
			if err := decoder.BeamQueue(blocks, func(id int, l []decoder.Scored) { lists[id] = l }, o, beam); err != nil {
				t.Fatal(err)
			}
			for i, mem := range mems {
				name := fmt.Sprintf("%s, %d sentences' rows, sentence %d", cfg.Positions, rows, i)
				sameHypothesis(t, name+", greedy", greedy[i], m.Greedy(mem, testBOS, testEOS, maxLen)[0])
				want, err := m.Beam(mem, testBOS, testEOS, beam)
				if err != nil {
					t.Fatal(err)
				}
				if len(lists[i]) != len(want[0]) {
					t.Fatalf("%s, beam: %d hypotheses, want %d", name, len(lists[i]), len(want[0]))
				}
				for k, h := range want[0] {
					sameHypothesis(t, fmt.Sprintf("%s, beam hypothesis %d", name, k), lists[i][k].Hypothesis, h.Hypothesis)
					if lists[i][k].LogProb != h.LogProb || lists[i][k].Score != h.Score {
						t.Fatalf("%s, beam hypothesis %d: log-probability %v and score %v, want %v and %v", name, k, lists[i][k].LogProb, lists[i][k].Score, h.LogProb, h.Score)
					}
				}
			}
		}
	}
}
