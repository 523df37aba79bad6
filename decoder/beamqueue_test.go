package decoder

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attend-nmt/attend/encoder"
)

// TestBeamQueueMatchesDecodingAlone decodes 11 sentences of 1 to 9 words with beam search of width 3 through a
// running batch of three sentences' rows (BeamQueue), the blocks arriving between "none yet" answers so that
// sentences join while others are at different steps, one block with settings of its own (another α, β and
// n-best), stepped by one goroutine and by two, by one decoder and by an ensemble of two; and requires for
// each sentence exactly the n-best list — words, attention, log-probabilities and scores — that Beam gives it
// alone (a batch of one sentence, unpadded).
func TestBeamQueueMatchesDecodingAlone(t *testing.T) {
	const vocab, maxLen = 9, 10
	opts := BeamOptions{Width: 3, NBest: 3, MaxLen: maxLen, Alpha: 0.6, Beta: 0.2}
	own := BeamOptions{Width: 3, NBest: 2, MaxLen: maxLen, MaxLenRatio: 1.5, Alpha: 1.2}
	rng := rand.New(rand.NewPCG(5, 6))
	blocks := randomBlocks(rng, [][]int{{3, 1, 4}, {9, 2, 6, 5}, {5, 3, 5, 8}})
	blocks[1].Beam = &own
	for _, members := range []int{1, 2} {
		e := &ensemble[float64]{mean: members > 1}
		for i := range members {
			e.members = append(e.members, testDecoder(t, vocab, uint64(7+i)))
		}
		for _, b := range blocks {
			b.Others = nil
			for range members - 1 {
				b.Others = append(b.Others, b.Enc)
			}
		}
		for _, threads := range []int{1, 2} {
			script := []*encBlock[float64]{blocks[0], blocks[1], {}, blocks[2]}
			got := map[int][]Scored{}
			e.beamQueue(3*opts.Width, threads, func() *encBlock[float64] {
				if len(script) == 0 {
					return nil
				}
				b := script[0]
				script = script[1:]
				return b
			}, queueBOS, queueEOS, opts, func(id int, list []Scored) {
				if _, twice := got[id]; twice {
					t.Fatalf("sentence %d came back twice", id)
				}
				got[id] = list
			})
			lengths := map[int]bool{}
			for _, b := range blocks {
				o := opts
				if b.Beam != nil {
					o = *b.Beam
				}
				for r, id := range b.IDs {
					enc, ls := alone(b, r)
					encs := []*encoder.Output[float64]{enc}
					for range members - 1 {
						encs = append(encs, enc)
					}
					want, err := e.Beam(encs, ls, queueBOS, queueEOS, o)
					if err != nil {
						t.Fatal(err)
					}
					if list, ok := got[id]; !ok || fmt.Sprint(list) != fmt.Sprint(want[0]) {
						t.Fatalf("%d members, threads %d: sentence %d: in the running batch (came back: %v)\n%v\nalone\n%v", members, threads, id, ok, list, want[0])
					}
					for _, h := range want[0] {
						lengths[len(h.Attention)] = true
					}
				}
			}
			if len(got) != 11 || len(lengths) < 3 {
				t.Fatalf("%d sentences came back, their hypotheses of %d lengths; want 11, of at least 3", len(got), len(lengths))
			}
		}
	}
}
