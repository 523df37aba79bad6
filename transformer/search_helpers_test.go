package transformer

import (
	"github.com/attend-nmt/attend/decoder"
	"github.com/attend-nmt/attend/kernels"
)

// The tests search through these: decoder.Greedy and decoder.Beam on the models' Sessions.

// Greedy decodes the sentences of mem greedily: decoder.Greedy on m's Session.
func (m *Model[T]) Greedy(mem *Memory[T], bos, eos, maxLen int) []decoder.Hypothesis {
	return (&Ensemble[T]{members: []*Model[T]{m}}).Greedy([]*Memory[T]{mem}, bos, eos, maxLen)
}

// Beam decodes the sentences of mem with beam search: decoder.Beam on m's Session.
func (m *Model[T]) Beam(mem *Memory[T], bos, eos int, opts decoder.BeamOptions) ([][]decoder.Scored, error) {
	return (&Ensemble[T]{members: []*Model[T]{m}}).Beam([]*Memory[T]{mem}, bos, eos, opts)
}

// Ensemble is models searched together, each on its own memory of the same sentences.
type Ensemble[T kernels.Float] struct{ members []*Model[T] }

// NewEnsemble returns the ensemble of members.
func NewEnsemble[T kernels.Float](members ...*Model[T]) (*Ensemble[T], error) {
	return &Ensemble[T]{members: members}, nil
}

func (e *Ensemble[T]) sessions(mems []*Memory[T]) []decoder.Session[T] {
	s := make([]decoder.Session[T], len(mems))
	for i, m := range e.members {
		s[i] = m.Session(mems[i])
	}
	return s
}

// Greedy is decoder.Greedy on the members' Sessions.
func (e *Ensemble[T]) Greedy(mems []*Memory[T], bos, eos, maxLen int) []decoder.Hypothesis {
	mem := mems[0]
	hyps, err := decoder.Greedy(e.sessions(mems), mem.Lengths[:mem.Rows], mem.SrcLen, e.members[0].Cfg.TgtVocab, bos, eos, maxLen, nil)
	if err != nil {
		panic(err)
	}
	return hyps
}

// Beam is decoder.Beam on the members' Sessions.
func (e *Ensemble[T]) Beam(mems []*Memory[T], bos, eos int, opts decoder.BeamOptions) ([][]decoder.Scored, error) {
	mem := mems[0]
	return decoder.Beam(e.sessions(mems), mem.Lengths[:mem.Rows], mem.SrcLen, e.members[0].Cfg.TgtVocab, bos, eos, opts, decoder.Output[T]{})
}
