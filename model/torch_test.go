package model

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/attend-nmt/attend/data"
)

// TestGradientsMatchPyTorch loads the weights of the PyTorch reference implementation's small model into attend's
// and checks that one Multi30k batch without dropout gives PyTorch's loss and gradients: the loss and the clip norm to 1e-5, the
// norm of every tensor's gradient to 1e-3 (relative), through the fused and the unfused training graphs. It
// needs what scripts/torch_weights.py writes (scripts/torch-check.sh runs both) in the folder named by
// ATTEND_TORCH_WEIGHTS, and is skipped without it: PyTorch is no dependency of the tests.
func TestGradientsMatchPyTorch(t *testing.T) {
	dir := os.Getenv("ATTEND_TORCH_WEIGHTS")
	if dir == "" {
		t.Skip("set ATTEND_TORCH_WEIGHTS to a folder written by scripts/torch_weights.py")
	}
	var torch struct {
		Tensors map[string]struct {
			Shape    []int   `json:"shape"`
			Offset   int     `json:"offset"`
			GradNorm float64 `json:"grad_norm"`
		} `json:"tensors"`
		SrcVocab []string `json:"src_vocab"`
		TgtVocab []string `json:"tgt_vocab"`
		Src      [][]int  `json:"src"`
		Tgt      [][]int  `json:"tgt"`
		Loss     float64  `json:"loss"`
		GradNorm float64  `json:"grad_norm"`
	}
	meta, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(meta, &torch); err != nil {
		t.Fatal(err)
	}
	weights, err := os.ReadFile(filepath.Join(dir, "weights.bin"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := data.NewVocab(torch.SrcVocab)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := data.NewVocab(torch.TgtVocab)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Small().Model
	cfg.Dropout = 0
	m, err := New[float32](cfg, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if len(torch.Tensors) != len(m.Params.List()) {
		t.Fatalf("PyTorch has %d tensors, attend's small model %d", len(torch.Tensors), len(m.Params.List()))
	}
	for _, p := range m.Params.List() {
		pt, ok := torch.Tensors[p.Name]
		if !ok || len(weights) < 4*(pt.Offset+len(p.Data)) {
			t.Fatalf("no weights for %s", p.Name)
		}
		if !slices.Equal(pt.Shape, p.Shape) {
			t.Fatalf("%s: PyTorch's shape %v, attend's %v", p.Name, pt.Shape, p.Shape)
		}
		for i := range p.Data {
			p.Data[i] = math.Float32frombits(binary.LittleEndian.Uint32(weights[4*(pt.Offset+i):]))
		}
	}
	examples := make([]data.Example, len(torch.Src))
	for i := range examples {
		examples[i] = data.Example{Src: torch.Src[i], Tgt: torch.Tgt[i]}
	}
	batch := data.MakeBatches(examples, data.BatchOptions{BatchSize: len(examples)}, nil)[0]
	close := func(what string, got, want, tol float64) {
		if math.Abs(got-want) > tol*math.Abs(want) {
			t.Errorf("%s: attend %.7g, PyTorch %.7g", what, got, want)
		}
	}
	for _, unfused := range []bool{false, true} {
		tr := NewTrainer(m, 1e-3, 1, 1)
		tr.Unfused = unfused
		res, err := tr.Gradients(&batch, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		close("loss", res.Loss, torch.Loss, 1e-5)
		close("gradient norm", GlobalNorm(tr.Grads), torch.GradNorm, 1e-5)
		for _, g := range tr.Grads.List() {
			var sq float64
			for _, x := range g.Data {
				sq += float64(x) * float64(x)
			}
			close("gradient norm of "+g.Name, math.Sqrt(sq), torch.Tensors[g.Name].GradNorm, 1e-3)
		}
	}
}
