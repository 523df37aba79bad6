package graph

import (
	"errors"
	"fmt"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/param"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Params binds parameter tensors to the nodes of one graph. A node views a contiguous block of a tensor's memory
// (a whole tensor, one gate's weights, or the rows of a weight that read one part of a concatenated input), so
// an optimizer that updates the tensors in place updates every cached graph at once.
type Params[T kernels.Float] struct {
	Graph *G.ExprGraph
	// Arena holds the scratch of the fused ops; graphs that never run at the same time share one.
	Arena *kernels.Arena[T]
	// Multiplier is what the fused ops multiply with beside float32 BLAS (nil: only that): a training worker's,
	// as its products ask (kernels.NewMultipliers).
	Multiplier *kernels.Multiplier
	// Salt, when not 0, is written into the names of the parameter and input nodes, which changes the hash of
	// every node that depends on them: a graph whose hashes collide (ErrHashCollision) is built again with
	// another salt.
	Salt     int
	bindings []binding[T]
	grads    G.Nodes
}

// ErrHashCollision is returned by Differentiate for a graph in which two different nodes have the same 32-bit
// hash: gorgonia's compiler (v0.9.18) numbers values by the hash alone and would compute one node in place of the
// other. It happens to about one graph in a few thousand of the unfused model's size; building the graph again
// with another Salt gives other hashes.
var ErrHashCollision = errors.New("graph: two nodes share a hash")

type binding[T kernels.Float] struct {
	node   *G.Node
	tensor *param.Tensor[T]
	offset int
}

// NewParams starts a graph whose fused ops take their scratch from arena (nil: a private one).
func NewParams[T kernels.Float](arena *kernels.Arena[T]) *Params[T] {
	if arena == nil {
		arena = kernels.NewArena[T]()
	}
	return &Params[T]{Graph: G.NewGraph(), Arena: arena}
}

// View returns a node over t.Data[offset : offset+size] with the given shape (size = product of shape). Asking
// again for the same block returns the same node.
func (p *Params[T]) View(t *param.Tensor[T], offset int, shape ...int) *G.Node {
	size := tensor.Shape(shape).TotalSize()
	if offset < 0 || offset+size > len(t.Data) {
		panic(fmt.Sprintf("graph: view [%d,%d) of %s with %d values", offset, offset+size, t.Name, len(t.Data)))
	}
	// gorgonia merges equal nodes, so a second view of the same block would be the same node bound twice and its
	// gradient counted twice: return the first one.
	for _, b := range p.bindings {
		if b.tensor == t && b.offset == offset && b.node.Shape().Eq(tensor.Shape(shape)) {
			return b.node
		}
	}
	value := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(t.Data[offset:offset+size]))
	name := p.salted(fmt.Sprintf("%s@%d", t.Name, offset))
	var n *G.Node
	switch len(shape) {
	case 1:
		n = G.NewVector(p.Graph, Dtype[T](), G.WithShape(shape...), G.WithName(name), G.WithValue(value))
	case 2:
		n = G.NewMatrix(p.Graph, Dtype[T](), G.WithShape(shape...), G.WithName(name), G.WithValue(value))
	default:
		n = G.NewTensor(p.Graph, Dtype[T](), len(shape), G.WithShape(shape...), G.WithName(name), G.WithValue(value))
	}
	p.bindings = append(p.bindings, binding[T]{node: n, tensor: t, offset: offset})
	return n
}

// Whole returns a node over all of t.
func (p *Params[T]) Whole(t *param.Tensor[T]) *G.Node { return p.View(t, 0, t.Shape...) }

// Input returns a node whose value is a tensor over data, which the caller refills before each run (dropout
// masks, for example).
func (p *Params[T]) Input(name string, data []T, shape ...int) *G.Node {
	value := tensor.New(tensor.WithShape(shape...), tensor.WithBacking(data))
	return G.NewTensor(p.Graph, Dtype[T](), len(shape), G.WithShape(shape...), G.WithName(p.salted(name)), G.WithValue(value))
}

// salted is name with the salt, if any, in front: FNV hashes that agree stay equal under a common suffix.
func (p *Params[T]) salted(name string) string {
	if p.Salt == 0 {
		return name
	}
	return fmt.Sprintf("%d~%s", p.Salt, name)
}

// Zeros returns a node holding zeros of the given shape, for initial states.
func (p *Params[T]) Zeros(name string, shape ...int) *G.Node {
	return p.Input(name, make([]T, tensor.Shape(shape).TotalSize()), shape...)
}

// Differentiate adds the gradient of the scalar loss with respect to every bound parameter node to the graph.
func (p *Params[T]) Differentiate(loss *G.Node) error {
	nodes := make(G.Nodes, len(p.bindings))
	for i, b := range p.bindings {
		nodes[i] = b.node
	}
	grads, err := G.Grad(loss, nodes...)
	if err != nil {
		return fmt.Errorf("graph: differentiate: %w", err)
	}
	p.grads = grads
	seen := make(map[uint32]*G.Node, len(p.Graph.AllNodes()))
	for _, n := range p.Graph.AllNodes() {
		if other, ok := seen[n.Hashcode()]; ok {
			return fmt.Errorf("%w: %s and %s (salt %d)", ErrHashCollision, other, n, p.Salt)
		}
		seen[n.Hashcode()] = n
	}
	return nil
}

// SumGrads sets grads, a set shaped like the parameters, to the sum over the graphs ps, in order, of scale × the
// gradients computed by their last runs: what zeroing grads and adding each graph's in turn, binding by binding, leaves, to
// the last bit (every value receives the same additions in the same order), in one pass over memory instead of
// one per graph and one to zero. The pass walks grads.Flat() in blocks of block values, shared out over the
// cores; done(k, values), when not nil, is called once for block k with its final values while they are still
// in cache (a norm's partial sums, for example), possibly on another goroutine and in any order of k.
func SumGrads[T kernels.Float](grads *param.Set[T], scale T, ps []*Params[T], block int, done func(k int, values []T)) {
	flat := grads.Flat()
	at := make(map[string]int, len(grads.List())) // each tensor's offset in flat
	off := 0
	for _, t := range grads.List() {
		at[t.Name] = off
		off += len(t.Data)
	}
	// Every bound node's gradient as a span of flat, graph by graph, binding by binding.
	type span struct {
		lo  int
		src []T
	}
	var spans []span
	for _, p := range ps {
		for i, b := range p.bindings {
			v := p.grads[i].Value()
			if v == nil {
				panic(fmt.Sprintf("graph: no gradient value for %s", b.node.Name()))
			}
			lo, ok := at[b.tensor.Name]
			if !ok {
				panic(fmt.Sprintf("graph: no gradient tensor %s", b.tensor.Name))
			}
			spans = append(spans, span{lo: lo + b.offset, src: v.Data().([]T)})
		}
	}
	blocks := (len(flat) + block - 1) / block
	kernels.Parallel(blocks, 1, func(first, last int) {
		for k := first; k < last; k++ {
			lo, hi := k*block, min((k+1)*block, len(flat))
			dst := flat[lo:hi]
			clear(dst)
			for _, s := range spans {
				from, to := max(lo, s.lo), min(hi, s.lo+len(s.src))
				if from >= to {
					continue
				}
				kernels.Axpy(scale, s.src[from-s.lo:to-s.lo], dst[from-lo:to-lo])
			}
			if done != nil {
				done(k, dst)
			}
		}
	})
}

// LayerNorm is kernels.LayerNorm in gorgonia ops over x (n, d), with the gain and bias (d) of a layer norm bound
// from p: row means as products with a constant (d, d) matrix of 1/d, the gain spread over the rows as an outer
// product with a column of ones. It is the unfused graphs' layer norm (the encoder's self-attention blocks, the
// Transformer's), the autodiff reference of the fused kernels'.
func LayerNorm[T kernels.Float](p *Params[T], x *G.Node, gain, bias *param.Tensor[T], n, d int) *G.Node {
	avg := make([]T, d*d)
	for i := range avg {
		avg[i] = T(1 / float64(d))
	}
	ones := make([]T, n)
	for i := range ones {
		ones[i] = 1
	}
	avgM := G.NewConstant(tensor.New(tensor.WithShape(d, d), tensor.WithBacking(avg)), G.WithName(fmt.Sprintf("avg%d", d)))
	onesM := G.NewConstant(tensor.New(tensor.WithShape(n, 1), tensor.WithBacking(ones)), G.WithName(fmt.Sprintf("ones%d", n)))
	centred := G.Must(G.Sub(x, G.Must(G.Mul(x, avgM))))
	variance := G.Must(G.Mul(G.Must(G.HadamardProd(centred, centred)), avgM))
	// 1/√v as Inverse(Sqrt(v)): gorgonia v0.9.18's InverseSqrt has a wrong gradient (−g/(2y³) for −g·y³/2).
	rstd := G.Must(G.Inverse(G.Must(G.Sqrt(G.Must(G.Add(variance, G.NewConstant(T(kernels.LayerNormEps))))))))
	gains := G.Must(G.Mul(onesM, p.View(gain, 0, 1, d)))
	return AddBias[T](G.Must(G.HadamardProd(G.Must(G.HadamardProd(centred, rstd)), gains)), p.Whole(bias))
}
