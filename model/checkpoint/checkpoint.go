// Package checkpoint reads and writes attend's checkpoint files: a versioned header, named tensors and a
// checksum, written atomically so that an interrupted write never loses the previous file.
//
// Layout, little-endian:
//
//	"ATTNCKPT"                      8-byte magic
//	uint32 version                  FormatVersion
//	uint64 n, n bytes               JSON header (opaque here: config, vocabularies, training position)
//	uint32 count                    number of tensors, then for each:
//	  uint16 n, n bytes             name
//	  uint8 dtype                   1 float32, 2 float64
//	  uint8 ndim, ndim × uint64     shape
//	  raw values                    IEEE bits, so NaN payloads, -0 and denormals round-trip exactly
//	32 bytes                        SHA-256 of everything before
package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
)

// FormatVersion is the version Write writes and the only one Read accepts.
const FormatVersion = 1

const magic = "ATTNCKPT"

const (
	dtypeF32 = 1
	dtypeF64 = 2
)

// Tensor is one named tensor; exactly one of F32 and F64 is non-nil, with the product of Shape values.
type Tensor struct {
	Name  string
	Shape []int
	F32   []float32
	F64   []float64
}

func (t Tensor) size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is the content of a checkpoint.
type File struct {
	Header  []byte // JSON metadata
	Tensors []Tensor
}

// Tensor returns the tensor called name and whether there is one.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Write writes f to path atomically: to a temporary file in the same directory, synced, then renamed over path.
// On error the temporary file is removed and any file already at path is untouched.
func Write(path string, f *File) (err error) {
	if err := validate(f); err != nil {
		return fmt.Errorf("checkpoint %s: %w", filepath.Base(path), err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	sum := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(tmp, sum), 1<<20)
	if err = encode(w, f); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if _, err = tmp.Write(sum.Sum(nil)); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename itself durable
		d.Sync()
		d.Close()
	}
	return nil
}

func validate(f *File) error {
	if !json.Valid(f.Header) {
		return errors.New("header is not valid JSON")
	}
	seen := map[string]bool{}
	for _, t := range f.Tensors {
		if seen[t.Name] {
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if len(t.Name) > math.MaxUint16 || len(t.Shape) > math.MaxUint8 {
			return fmt.Errorf("tensor %q: name or rank too large", t.Name)
		}
		n := len(t.F32)
		if (t.F32 == nil) == (t.F64 == nil) {
			if !(t.F32 == nil && t.F64 == nil && t.size() == 0) {
				return fmt.Errorf("tensor %q: need exactly one of F32 and F64", t.Name)
			}
		}
		if t.F64 != nil {
			n = len(t.F64)
		}
		if n != t.size() {
			return fmt.Errorf("tensor %q: %d values for shape %v", t.Name, n, t.Shape)
		}
	}
	return nil
}

func encode(w *bufio.Writer, f *File) error {
	buf := make([]byte, 0, 1<<16)
	buf = append(buf, magic...)
	buf = binary.LittleEndian.AppendUint32(buf, FormatVersion)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(f.Header)))
	buf = append(buf, f.Header...)
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(f.Tensors)))
	for _, t := range f.Tensors {
		buf = binary.LittleEndian.AppendUint16(buf, uint16(len(t.Name)))
		buf = append(buf, t.Name...)
		if t.F64 != nil {
			buf = append(buf, dtypeF64)
		} else {
			buf = append(buf, dtypeF32)
		}
		buf = append(buf, byte(len(t.Shape)))
		for _, d := range t.Shape {
			buf = binary.LittleEndian.AppendUint64(buf, uint64(d))
		}
		var err error
		if buf, err = appendValues(w, buf, t.F32, func(b []byte, v float32) []byte {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}); err != nil {
			return err
		}
		if buf, err = appendValues(w, buf, t.F64, func(b []byte, v float64) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}); err != nil {
			return err
		}
	}
	_, err := w.Write(buf)
	return err
}

// appendValues appends the encoded values to buf, handing full 64 KiB chunks to w so that a large tensor is
// never encoded into memory whole. It returns the partly filled buffer.
func appendValues[V float32 | float64](w *bufio.Writer, buf []byte, values []V, put func([]byte, V) []byte) ([]byte, error) {
	for _, v := range values {
		buf = put(buf, v)
		if len(buf) >= 1<<16-8 {
			if _, err := w.Write(buf); err != nil {
				return buf, err
			}
			buf = buf[:0]
		}
	}
	return buf, nil
}

// Read reads and verifies the checkpoint at path: magic, version, every length, and the checksum.
func Read(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	name := filepath.Base(path)
	if len(raw) < len(magic)+4+sha256.Size || string(raw[:len(magic)]) != magic {
		return nil, fmt.Errorf("checkpoint %s: not an attend checkpoint", name)
	}
	body, trailer := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if v := binary.LittleEndian.Uint32(raw[len(magic):]); v != FormatVersion {
		return nil, fmt.Errorf("checkpoint %s: format version %d, this attend reads version %d", name, v, FormatVersion)
	}
	if got := sha256.Sum256(body); !bytes.Equal(got[:], trailer) {
		return nil, fmt.Errorf("checkpoint %s: checksum mismatch (file is corrupt or truncated)", name)
	}
	f, err := decode(&reader{b: body[len(magic)+4:]})
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", name, err)
	}
	return f, nil
}

// reader reads little-endian fields from a byte slice, remembering the first shortage.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n uint64) []byte {
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errors.New("truncated or corrupt structure")
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}
func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}
func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}
func (r *reader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func decode(r *reader) (*File, error) {
	f := &File{Header: append([]byte(nil), r.take(r.u64())...)}
	count := r.u32()
	seen := map[string]bool{}
	for i := uint32(0); i < count && r.err == nil; i++ {
		t := Tensor{Name: string(r.take(uint64(r.u16())))}
		dtype, ndim := r.u8(), r.u8()
		size := uint64(1)
		for d := 0; d < int(ndim) && r.err == nil; d++ {
			dim := r.u64()
			if dim > uint64(len(r.b)) { // no dimension can exceed the bytes that remain
				return nil, fmt.Errorf("tensor %q: dimension %d too large", t.Name, dim)
			}
			t.Shape = append(t.Shape, int(dim))
			size *= dim
			if size > uint64(len(r.b)) {
				return nil, fmt.Errorf("tensor %q: shape %v larger than the file", t.Name, t.Shape)
			}
		}
		switch dtype {
		case dtypeF32:
			b := r.take(4 * size)
			t.F32 = make([]float32, size)
			for j := range t.F32 {
				if b != nil {
					t.F32[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
				}
			}
		case dtypeF64:
			b := r.take(8 * size)
			t.F64 = make([]float64, size)
			for j := range t.F64 {
				if b != nil {
					t.F64[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
				}
			}
		default:
			return nil, fmt.Errorf("tensor %q: unknown dtype %d", t.Name, dtype)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d unexpected bytes after the last tensor", len(r.b))
	}
	return f, nil
}
