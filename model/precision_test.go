package model

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/kernels"
	"github.com/attend-nmt/attend/model/checkpoint"
)

// TestCheckpointOfReplacedPrecisionKeysLoads loads a checkpoint whose stored config has train.bf16 and
// train.bf16x3 (written before train.precision) in place of train.precision: it must load with the precision
// they meant and one note naming them.
func TestCheckpointOfReplacedPrecisionKeysLoads(t *testing.T) {
	cfg := tinyConfig()
	m := newTestModel[float32](t, cfg.Model, 9, 11, 1)
	path := filepath.Join(t.TempDir(), "old.ckpt")
	if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	f, err := checkpoint.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	now := []byte(`"Precision":"float32"`)
	if !bytes.Contains(f.Header, now) {
		t.Fatalf("the header has no %s: %s", now, f.Header)
	}
	f.Header = bytes.Replace(f.Header, now, []byte(`"BF16":true,"BF16x3":true`), 1)
	if err := checkpoint.Write(path, f); err != nil {
		t.Fatal(err)
	}
	ck, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Config.Train.Precision != kernels.PrecisionBF16 || len(ck.Notes) != 1 ||
		!strings.Contains(ck.Notes[0], "train.bf16: true and train.bf16x3: true are replaced by train.precision; read as train.precision: bf16") {
		t.Fatalf("precision %q, notes %q", ck.Config.Train.Precision, ck.Notes)
	}
}
