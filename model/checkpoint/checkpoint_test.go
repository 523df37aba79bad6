package checkpoint

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func sample() *File {
	nan := math.Float32frombits(0x7fc01234) // NaN with a payload
	return &File{
		Header: []byte(`{"format":"test","n":1}`),
		Tensors: []Tensor{
			{Name: "a", Shape: []int{2, 3}, F32: []float32{1, -0, nan, float32(math.Inf(-1)), math.SmallestNonzeroFloat32, 7}},
			{Name: "b", Shape: []int{2}, F64: []float64{math.Float64frombits(0x7ff8000000000abc), -math.SmallestNonzeroFloat64}},
			{Name: "empty", Shape: []int{0}, F32: []float32{}},
			{Name: "scalar", Shape: []int{}, F64: []float64{3.5}},
		},
	}
}

func TestRoundTripIsBitExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.ckpt")
	want := sample()
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Header, want.Header) || len(got.Tensors) != len(want.Tensors) {
		t.Fatalf("header or tensor count differ")
	}
	for i, w := range want.Tensors {
		g := got.Tensors[i]
		if g.Name != w.Name || !reflect.DeepEqual(g.Shape, w.Shape) && !(len(g.Shape) == 0 && len(w.Shape) == 0) {
			t.Fatalf("tensor %d: %s %v, want %s %v", i, g.Name, g.Shape, w.Name, w.Shape)
		}
		for j := range w.F32 {
			if math.Float32bits(g.F32[j]) != math.Float32bits(w.F32[j]) {
				t.Fatalf("%s[%d]: bits %x, want %x", w.Name, j, math.Float32bits(g.F32[j]), math.Float32bits(w.F32[j]))
			}
		}
		for j := range w.F64 {
			if math.Float64bits(g.F64[j]) != math.Float64bits(w.F64[j]) {
				t.Fatalf("%s[%d]: bits differ", w.Name, j)
			}
		}
	}
	if tt, ok := got.Tensor("b"); !ok || len(tt.F64) != 2 {
		t.Fatal("Tensor lookup failed")
	}
}

func TestEveryFlippedByteIsDetected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	for i := range good {
		bad := append([]byte(nil), good...)
		bad[i] ^= 0x40
		os.WriteFile(path, bad, 0o644)
		if _, err := Read(path); err == nil {
			t.Fatalf("flipping byte %d of %d went unnoticed", i, len(good))
		}
	}
	for _, n := range []int{0, 5, 12, 40, len(good) - 33, len(good) - 1} {
		os.WriteFile(path, good[:n], 0o644)
		if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "m.ckpt") {
			t.Fatalf("truncated at %d: %v", n, err)
		}
	}
}

func TestReadRejectsOtherVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.ckpt")
	Write(path, sample())
	raw, _ := os.ReadFile(path)
	raw[8] = 9 // version field
	os.WriteFile(path, raw, 0o644)
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("version 9: %v", err)
	}
}

// TestFailedWriteKeepsTheOldFile checks atomicity: a write that fails leaves the previous checkpoint intact and
// no temporary file behind.
func TestFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ckpt")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := []*File{
		{Header: []byte(`{not json`)},
		{Header: []byte(`{}`), Tensors: []Tensor{{Name: "x", Shape: []int{3}, F32: []float32{1}}}},
		{Header: []byte(`{}`), Tensors: []Tensor{{Name: "x", Shape: []int{1}, F32: []float32{1}}, {Name: "x", Shape: []int{1}, F32: []float32{2}}}},
	}
	for i, f := range bad {
		if err := Write(path, f); err == nil {
			t.Fatalf("bad file %d written", i)
		}
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir", "m.ckpt"), sample()); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("failed writes changed the existing checkpoint")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries after failed writes, want only m.ckpt", len(entries))
	}
}

func TestMissingFileNamesThePath(t *testing.T) {
	if _, err := Read("/nonexistent/x.ckpt"); err == nil || !strings.Contains(err.Error(), "x.ckpt") {
		t.Fatalf("got %v", err)
	}
}

func FuzzRead(f *testing.F) {
	path := filepath.Join(f.TempDir(), "seed.ckpt")
	Write(path, sample())
	good, _ := os.ReadFile(path)
	f.Add(good)
	f.Add([]byte("ATTNCKPT"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.ckpt")
		os.WriteFile(p, data, 0o644)
		Read(p) // must not panic
	})
}

func BenchmarkWriteRead50MB(b *testing.B) {
	data := make([]float32, 50<<20/4)
	f := &File{Header: []byte(`{}`), Tensors: []Tensor{{Name: "w", Shape: []int{len(data)}, F32: data}}}
	path := filepath.Join(b.TempDir(), "big.ckpt")
	b.SetBytes(2 * 50 << 20)
	for i := 0; i < b.N; i++ {
		if err := Write(path, f); err != nil {
			b.Fatal(err)
		}
		if _, err := Read(path); err != nil {
			b.Fatal(err)
		}
	}
}
