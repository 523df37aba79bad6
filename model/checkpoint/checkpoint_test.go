package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sample has every awkward value and shape the format must carry exactly.
func sample() *File {
	return &File{
		Header: []byte("{\"config\": {\"emb\": 8},\n \"vocab\": [\"<pad>\", \"über\"], \"step\": 12}"),
		Tensors: []Tensor{
			{Name: "enc.w", Shape: []int{2, 5}, F32: []float32{
				math.Float32frombits(0x7fc01234), // quiet NaN with a payload
				math.Float32frombits(0xff800001), // negative signalling NaN
				float32(math.Inf(1)), float32(math.Inf(-1)),
				float32(math.Copysign(0, -1)),
				math.SmallestNonzeroFloat32,      // smallest denormal
				math.Float32frombits(0x807fffff), // largest negative denormal
				math.MaxFloat32, 1, -2.5,
			}},
			{Name: "adam.m/enc.w", Shape: []int{3, 2}, F64: []float64{
				math.Float64frombits(0x7ff8000000000abc), // NaN with a payload
				math.Float64frombits(0x7ff0000000000001), // signalling NaN
				math.Inf(-1), math.Copysign(0, -1),
				-math.SmallestNonzeroFloat64, math.Float64frombits(0x000fffffffffffff),
			}},
			{Name: "empty32", Shape: []int{0}, F32: []float32{}},
			{Name: "empty64", Shape: []int{3, 0, 7}, F64: []float64{}},
			{Name: "scalar32", Shape: []int{}, F32: []float32{-0.125}},
			{Name: "scalar64", Shape: nil, F64: []float64{math.Pi}},
		},
	}
}

func writeSample(t *testing.T) (path string, content []byte) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "m.ckpt")
	if err := Write(path, sample()); err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, content
}

func writeBytes(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func withChecksum(body []byte) []byte {
	sum := sha256.Sum256(body)
	return append(bytes.Clone(body), sum[:]...)
}

func TestRoundTripIsBitExact(t *testing.T) {
	want := sample()
	path, written := writeSample(t)
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Header, want.Header) {
		t.Errorf("header = %q, want %q", got.Header, want.Header)
	}
	if len(got.Tensors) != len(want.Tensors) {
		t.Fatalf("%d tensors, want %d", len(got.Tensors), len(want.Tensors))
	}
	for i, w := range want.Tensors {
		g := got.Tensors[i]
		if g.Name != w.Name {
			t.Errorf("tensor %d name = %q, want %q", i, g.Name, w.Name)
		}
		if len(g.Shape) != len(w.Shape) {
			t.Errorf("%s: shape %v, want %v", w.Name, g.Shape, w.Shape)
		}
		for j := range min(len(g.Shape), len(w.Shape)) {
			if g.Shape[j] != w.Shape[j] {
				t.Errorf("%s: shape %v, want %v", w.Name, g.Shape, w.Shape)
			}
		}
		if (g.F32 == nil) != (w.F32 == nil) || (g.F64 == nil) != (w.F64 == nil) {
			t.Errorf("%s: dtype changed (F32 nil %v, F64 nil %v)", w.Name, g.F32 == nil, g.F64 == nil)
			continue
		}
		if len(g.F32) != len(w.F32) || len(g.F64) != len(w.F64) {
			t.Errorf("%s: %d+%d values, want %d+%d", w.Name, len(g.F32), len(g.F64), len(w.F32), len(w.F64))
			continue
		}
		for j := range w.F32 {
			if gb, wb := math.Float32bits(g.F32[j]), math.Float32bits(w.F32[j]); gb != wb {
				t.Errorf("%s[%d] bits = %#08x, want %#08x", w.Name, j, gb, wb)
			}
		}
		for j := range w.F64 {
			if gb, wb := math.Float64bits(g.F64[j]), math.Float64bits(w.F64[j]); gb != wb {
				t.Errorf("%s[%d] bits = %#016x, want %#016x", w.Name, j, gb, wb)
			}
		}
	}

	// The encoding is canonical: writing what was read gives the same bytes.
	again := filepath.Join(t.TempDir(), "again.ckpt")
	if err := Write(again, got); err != nil {
		t.Fatal(err)
	}
	rewritten, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rewritten, written) {
		t.Error("rewriting a read checkpoint changed its bytes")
	}
}

func TestWriteLaysOutFieldsAsDocumented(t *testing.T) {
	f := &File{Header: []byte(`{}`), Tensors: []Tensor{{Name: "w", Shape: []int{2}, F32: []float32{1, 0.5}}}}
	path := filepath.Join(t.TempDir(), "m.ckpt")
	if err := Write(path, f); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	body = append(body, "ATTNCKPT"...)
	body = binary.LittleEndian.AppendUint32(body, 1)
	body = binary.LittleEndian.AppendUint64(body, 2)
	body = append(body, "{}"...)
	body = binary.LittleEndian.AppendUint32(body, 1)
	body = binary.LittleEndian.AppendUint16(body, 1)
	body = append(body, 'w', 1, 1)
	body = binary.LittleEndian.AppendUint64(body, 2)
	body = binary.LittleEndian.AppendUint32(body, 0x3f800000)
	body = binary.LittleEndian.AppendUint32(body, 0x3f000000)
	if want := withChecksum(body); !bytes.Equal(got, want) {
		t.Errorf("file =\n% x\nwant\n% x", got, want)
	}
}

func TestFileTensorFindsByName(t *testing.T) {
	f := sample()
	got, ok := f.Tensor("adam.m/enc.w")
	if !ok || got.Name != "adam.m/enc.w" || len(got.F64) != 6 {
		t.Errorf("Tensor(adam.m/enc.w) = %v, %v", got.Name, ok)
	}
	if _, ok := f.Tensor("missing"); ok {
		t.Error("Tensor(missing) reported a tensor")
	}
}

func TestReadReportsFlippedByteAsChecksumMismatch(t *testing.T) {
	path, content := writeSample(t)
	for offset := range content {
		corrupt := bytes.Clone(content)
		corrupt[offset] ^= 0x10
		if err := os.WriteFile(path, corrupt, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		switch {
		case err == nil:
			t.Fatalf("byte %d flipped: Read succeeded", offset)
		case offset < prefixLen:
			// Magic and version are checked before the checksum: a bad one means a file this build cannot verify.
		case !errors.Is(err, ErrChecksum):
			t.Errorf("byte %d flipped: error %q, want a checksum mismatch", offset, err)
		}
	}
	if err := os.WriteFile(path, append(bytes.Clone(content[:len(content)-1]), content[len(content)-1]^1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(path)
	if want := "checkpoint " + path + ": checksum mismatch (file is corrupt or truncated)"; err == nil || err.Error() != want {
		t.Errorf("error = %v, want %q", err, want)
	}
}

func TestReadRejectsTruncatedFile(t *testing.T) {
	path, content := writeSample(t)
	for size := range len(content) {
		if err := os.WriteFile(path, content[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		switch {
		case err == nil:
			t.Fatalf("truncated to %d of %d bytes: Read succeeded", size, len(content))
		case !strings.Contains(err.Error(), path):
			t.Errorf("truncated to %d: error %q does not name the file", size, err)
		case size >= prefixLen+sha256.Size && !errors.Is(err, ErrChecksum):
			t.Errorf("truncated to %d: error %q, want a checksum mismatch", size, err)
		case size < prefixLen+sha256.Size && !strings.Contains(err.Error(), "truncated"):
			t.Errorf("truncated to %d: error %q does not say truncated", size, err)
		}
	}
}

func TestReadRejectsBadMagic(t *testing.T) {
	_, content := writeSample(t)
	for _, bad := range [][]byte{
		append([]byte("ATTNCKPX"), content[8:]...),
		[]byte("PK\x03\x04 a zip file, not a checkpoint at all........................"),
		[]byte("x"),
	} {
		path := writeBytes(t, bad)
		_, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), "bad magic") || !strings.Contains(err.Error(), path) {
			t.Errorf("Read(%.12q...) error = %v, want bad magic naming the file", bad, err)
		}
	}
}

func TestReadRejectsOtherVersion(t *testing.T) {
	_, content := writeSample(t)
	body := bytes.Clone(content[:len(content)-sha256.Size])
	binary.LittleEndian.PutUint32(body[len(magic):], 2)
	path := writeBytes(t, withChecksum(body))
	_, err := Read(path)
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("error = %v, want ErrVersion mentioning version 2", err)
	}
}

// builder assembles a checkpoint body by hand, so tests can write files Write refuses to produce.
type builder struct{ b []byte }

func newBuilder(header string, count uint32) *builder {
	b := &builder{b: []byte(magic)}
	b.u32(FormatVersion).u64(uint64(len(header)))
	b.b = append(b.b, header...)
	return b.u32(count)
}

func (b *builder) u8(v uint8) *builder   { b.b = append(b.b, v); return b }
func (b *builder) u16(v uint16) *builder { b.b = binary.LittleEndian.AppendUint16(b.b, v); return b }
func (b *builder) u32(v uint32) *builder { b.b = binary.LittleEndian.AppendUint32(b.b, v); return b }
func (b *builder) u64(v uint64) *builder { b.b = binary.LittleEndian.AppendUint64(b.b, v); return b }
func (b *builder) raw(s string) *builder { b.b = append(b.b, s...); return b }

// tensor appends a tensor header with the given dims, followed by data zero bytes.
func (b *builder) tensor(name string, dtype uint8, dims []uint64, data int) *builder {
	b.u16(uint16(len(name))).raw(name).u8(dtype).u8(uint8(len(dims)))
	for _, d := range dims {
		b.u64(d)
	}
	b.b = append(b.b, make([]byte, data)...)
	return b
}

func TestReadRejectsMalformedStructureWithValidChecksum(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{"duplicate names",
			newBuilder(`{}`, 2).tensor("w", 1, []uint64{1}, 4).tensor("w", 1, []uint64{1}, 4).b,
			`tensor "w" appears twice`},
		{"dims larger than the file",
			newBuilder(`{}`, 1).tensor("w", 1, []uint64{1 << 40, 1 << 40}, 16).b,
			"needs more than"},
		{"dims whose product overflows",
			newBuilder(`{}`, 1).tensor("w", 2, []uint64{1 << 32, 1 << 32, 1 << 32}, 16).b,
			"needs more than"},
		{"dim beyond int",
			newBuilder(`{}`, 1).tensor("w", 1, []uint64{0, math.MaxUint64}, 0).b,
			"too large"},
		{"data shorter than shape",
			newBuilder(`{}`, 1).tensor("w", 2, []uint64{3}, 16).b,
			"needs more than"},
		{"unknown dtype",
			newBuilder(`{}`, 1).tensor("w", 3, []uint64{1}, 4).b,
			"unknown dtype 3"},
		{"empty name",
			newBuilder(`{}`, 1).tensor("", 1, []uint64{1}, 4).b,
			"empty name"},
		{"bytes after the last tensor",
			newBuilder(`{}`, 1).tensor("w", 1, []uint64{1}, 5).b,
			"1 unexpected bytes"},
		{"more tensors than fit",
			newBuilder(`{}`, math.MaxUint32).tensor("w", 1, []uint64{1}, 4).b,
			"cannot fit"},
		{"fewer tensors than counted",
			newBuilder(`{}`, 2).tensor("w", 1, []uint64{1}, 4).b,
			"tensor 2 of 2"},
		{"header longer than the file",
			append([]byte(magic+"\x01\x00\x00\x00"), binary.LittleEndian.AppendUint64(nil, math.MaxUint64)...),
			"header length"},
		{"header not JSON",
			newBuilder(`{"a":`, 0).b,
			"header is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeBytes(t, withChecksum(tt.body))
			f, err := Read(path)
			if err == nil {
				t.Fatalf("Read succeeded with %d tensors", len(f.Tensors))
			}
			if errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want one containing %q", err, tt.want)
			}
		})
	}
}

// assertUntouched checks that dir holds exactly the file at path, with the given content.
func assertUntouched(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("existing checkpoint changed")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(path) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s", names, filepath.Base(path))
	}
}

func TestWriteRejectsInvalidFile(t *testing.T) {
	ok := func() Tensor { return Tensor{Name: "w", Shape: []int{2}, F32: []float32{1, 2}} }
	tests := []struct {
		name string
		file File
		want string
	}{
		{"truncated JSON header", File{Header: []byte(`{"a":`)}, "not valid JSON"},
		{"empty header", File{}, "not valid JSON"},
		{"duplicate names", File{Header: []byte(`{}`), Tensors: []Tensor{ok(), ok()}}, `"w" appears twice`},
		{"data longer than shape", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", Shape: []int{2}, F32: []float32{1, 2, 3}}}}, "3 values for shape [2]"},
		{"data shorter than shape", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", Shape: []int{2, 2}, F64: []float64{1, 2, 3}}}}, "3 values for shape [2 2]"},
		{"scalar without a value", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", F32: []float32{}}}}, "0 values for shape []"},
		{"shape whose product overflows", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", Shape: []int{math.MaxInt, math.MaxInt}, F32: []float32{1}}}}, "values for shape"},
		{"negative dimension", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", Shape: []int{-1, -2}, F32: []float32{1, 2}}}}, "negative dimension"},
		{"no data", File{Header: []byte(`{}`), Tensors: []Tensor{{Name: "w", Shape: []int{0}}}}, "exactly one"},
		{"both dtypes", File{Header: []byte(`{}`),
			Tensors: []Tensor{{Name: "w", Shape: []int{1}, F32: []float32{1}, F64: []float64{1}}}}, "exactly one"},
		{"empty name", File{Header: []byte(`{}`), Tensors: []Tensor{{Shape: []int{1}, F32: []float32{1}}}}, "empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path, before := writeSample(t)
			err := Write(path, &tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("error = %v, want one naming %s and containing %q", err, path, tt.want)
			}
			assertUntouched(t, path, before)
		})
	}
}

func TestWriteFailureKeepsExistingFile(t *testing.T) {
	t.Run("directory does not exist", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "no-such-dir", "m.ckpt")
		err := Write(path, sample())
		if err == nil || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v, want not-exist naming %s", err, path)
		}
	})
	t.Run("error midway through the data", func(t *testing.T) {
		path, before := writeSample(t)
		failure := errors.New("disk on fire")
		err := writeAtomic(path, func(w io.Writer) error {
			if _, err := w.Write(make([]byte, 3*chunkSize)); err != nil {
				return err
			}
			return failure
		})
		if !errors.Is(err, failure) || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v, want %v naming %s", err, failure, path)
		}
		assertUntouched(t, path, before)
	})
}

func TestWriteReplacesExistingFile(t *testing.T) {
	path, _ := writeSample(t)
	replacement := &File{Header: []byte(`{"step":2}`), Tensors: []Tensor{{Name: "b", Shape: []int{1}, F64: []float64{7}}}}
	if err := Write(path, replacement); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Header) != `{"step":2}` || len(got.Tensors) != 1 || got.Tensors[0].F64[0] != 7 {
		t.Errorf("read back %s with %d tensors, want the replacement", got.Header, len(got.Tensors))
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	assertUntouched(t, path, content) // no temporary file left behind
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", info.Mode().Perm())
	}
}

func TestWriteAcceptsRelativePath(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := Write("m.ckpt", sample()); err != nil {
		t.Fatal(err)
	}
	if _, err := Read("m.ckpt"); err != nil {
		t.Fatal(err)
	}
}

func TestReadMissingFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.ckpt")
	_, err := Read(path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("error = %v, want not-exist naming %s", err, path)
	}
}

// FuzzRead checks that no input makes Read panic or over-allocate, and that anything it accepts is written
// back byte for byte. Each input is tried as it is and with a valid checksum appended, so the fuzzer can reach
// past the checksum into the structure.
func FuzzRead(f *testing.F) {
	var valid bytes.Buffer
	if err := encode(&valid, sample()); err != nil {
		f.Fatal(err)
	}
	f.Add(withChecksum(valid.Bytes()))
	f.Add(valid.Bytes())
	f.Add(newBuilder(`{}`, 1).tensor("w", 1, []uint64{1 << 40, 1 << 40}, 16).b)
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, content := range [][]byte{data, withChecksum(data)} {
			got, err := decode(bytes.NewReader(content), int64(len(content)))
			if err != nil {
				continue
			}
			var again bytes.Buffer
			if err := validate(got); err != nil {
				t.Fatalf("Read accepted a file Write rejects: %v", err)
			}
			if err := encode(&again, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(withChecksum(again.Bytes()), content) {
				t.Fatal("Read accepted a file that does not write back identically")
			}
		}
	})
}

// BenchmarkWriteRead writes and reads a 50 MB float32 checkpoint shaped like a small model.
func BenchmarkWriteRead(b *testing.B) {
	const total = 50_000_000 / 4
	f := &File{Header: []byte(`{"bench":true}`)}
	for i, rows := range []int{4096, 2048, 1024, 512} {
		cols := total / 4 / rows
		values := make([]float32, rows*cols)
		for j := range values {
			values[j] = float32(j%1000) * 1e-3
		}
		f.Tensors = append(f.Tensors, Tensor{Name: string(rune('a' + i)), Shape: []int{rows, cols}, F32: values})
	}
	path := filepath.Join(b.TempDir(), "bench.ckpt")
	if err := Write(path, f); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Write", func(b *testing.B) {
		b.SetBytes(info.Size())
		for b.Loop() {
			if err := Write(path, f); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Read", func(b *testing.B) {
		b.SetBytes(info.Size())
		for b.Loop() {
			if _, err := Read(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestEncodeGivesTheBytesWriteWrites: Encode to memory and Write to a file produce the same bytes, and an
// invalid file is refused by both.
func TestEncodeGivesTheBytesWriteWrites(t *testing.T) {
	_, written := writeSample(t)
	var encoded bytes.Buffer
	if err := Encode(&encoded, sample()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(encoded.Bytes(), written) {
		t.Fatalf("Encode gave %d bytes, Write %d, or they differ", encoded.Len(), len(written))
	}
	if err := Encode(io.Discard, &File{Header: []byte(`{`)}); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("Encode of an invalid header: %v", err)
	}
}

// TestReadHeaderAndHasMagic checks the quick looks at a file that the output guard takes: HasMagic knows a
// checkpoint (or the start of one) by its first bytes, and ReadHeader returns the header of a checkpoint without
// its tensors, refusing what is not one or whose header length runs past the end.
func TestReadHeaderAndHasMagic(t *testing.T) {
	path, content := writeSample(t)
	for _, c := range []struct {
		head string
		want bool
	}{{string(content[:40]), true}, {"ATTN", true}, {"", false}, {"notes\n", false}, {"ATTNCKPX", false}} {
		if got := HasMagic([]byte(c.head)); got != c.want {
			t.Errorf("HasMagic(%q) = %v, want %v", c.head, got, c.want)
		}
	}
	header, err := ReadHeader(path)
	if err != nil || !bytes.Equal(header, sample().Header) {
		t.Fatalf("ReadHeader = %q, %v; want the sample's header", header, err)
	}
	long := bytes.Clone(content)
	binary.LittleEndian.PutUint64(long[prefixLen:], uint64(len(content)+1))
	for name, bad := range map[string][]byte{"notes": []byte("notes about a model\n"), "a header past the end": long, "the magic alone": []byte(magic)} {
		if _, err := ReadHeader(writeBytes(t, bad)); err == nil {
			t.Errorf("ReadHeader of %s: no error", name)
		}
	}
}
