// Package checkpoint reads and writes attend's checkpoint files: a versioned header, named tensors and a
// checksum, written atomically so that an interrupted write never loses the previous file (WriteFile writes the
// other files a run keeps beside its checkpoint the same way).
//
// # Layout
//
// All integers are little-endian:
//
//	"ATTNCKPT"                    8-byte magic
//	uint32                        format version (FormatVersion)
//	uint64 n, n bytes             header: JSON, opaque to this package
//	uint32                        tensor count, then for each tensor:
//	  uint16 n, n bytes           name (not empty, unique in the file)
//	  uint8                       dtype: 1 = float32, 2 = float64
//	  uint8 ndim, ndim × uint64   shape (ndim 0 is a scalar)
//	  product(shape) values       math.Float32bits / math.Float64bits of each value, row-major
//	32 bytes                      SHA-256 of every preceding byte
//
// Values are stored as their IEEE 754 bits, so NaN payloads, -0, infinities and denormals round-trip exactly.
// The encoding is canonical: reading a file and writing it back gives the same bytes.
//
// Both Write and Read stream through a small buffer, so neither holds a second copy of the tensors, and Read
// checks every length against the bytes left in the file before allocating for it.
package checkpoint

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"unsafe"
)

// FormatVersion is the version written by Write; Read rejects files of any other version with ErrVersion.
const FormatVersion = 1

// ErrChecksum is the error Read wraps when the trailing SHA-256 does not match the file's content.
var ErrChecksum = errors.New("checksum mismatch (file is corrupt or truncated)")

// ErrVersion is the error Read wraps when the file has a format version other than FormatVersion.
var ErrVersion = errors.New("unsupported format version")

const (
	magic     = "ATTNCKPT"
	prefixLen = len(magic) + 4 // magic and version
	chunkSize = 64 << 10       // encode and decode buffer

	dtypeFloat32 = 1
	dtypeFloat64 = 2
)

// Tensor is one named tensor. Exactly one of F32 and F64 is non-nil and its length is the product of Shape
// (1 for a scalar, whose Shape is empty). Values are row-major.
type Tensor struct {
	Name  string
	Shape []int
	F32   []float32
	F64   []float64
}

// File is the content of a checkpoint.
type File struct {
	Header  []byte // JSON metadata, opaque to this package; must be valid JSON
	Tensors []Tensor
}

// Tensor returns the tensor called name and whether f has one.
func (f *File) Tensor(name string) (Tensor, bool) {
	for _, t := range f.Tensors {
		if t.Name == name {
			return t, true
		}
	}
	return Tensor{}, false
}

// Write writes f to path atomically: it writes a temporary file in the same directory (.NAME.tmp-PID-RANDOM,
// see RemoveStale), syncs it, renames it over path and syncs the directory. f is checked before anything is
// written (valid JSON header, unique non-empty names, exactly one data slice per tensor with the length its
// shape implies). On any error the temporary file is removed and an existing file at path is left untouched. A
// new file gets mode 0644.
func Write(path string, f *File) error {
	if err := validate(f); err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return writeAtomic(path, func(w io.Writer) error { return encode(w, f) })
}

// Encode writes f to w in the checkpoint format, checksum included: the bytes Write puts in a file, for a
// caller that stores them elsewhere. f is checked first, as Write checks it.
func Encode(w io.Writer, f *File) error {
	if err := validate(f); err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if err := summed(w, func(w io.Writer) error { return encode(w, f) }); err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	return nil
}

// summed writes what encode produces, followed by its SHA-256, to w.
func summed(w io.Writer, encode func(io.Writer) error) error {
	sum := sha256.New()
	if err := encode(io.MultiWriter(w, sum)); err != nil {
		return err
	}
	_, err := w.Write(sum.Sum(nil))
	return err
}

// writeAtomic writes what encode produces, followed by its SHA-256, to path through a temporary file.
func writeAtomic(path string, encode func(io.Writer) error) error {
	err := writeThroughTemp(path, func(w io.Writer) error {
		buffered := bufio.NewWriterSize(w, chunkSize)
		if err := summed(buffered, encode); err != nil {
			return err
		}
		return buffered.Flush()
	})
	if err != nil {
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	return nil
}

// WriteFile writes what write produces to path as checkpoints are written: through a temporary file beside it
// (.NAME.tmp-PID-RANDOM, which RemoveStale recognises), synced and renamed over path, so that path holds the
// old content or the new one whole, never a part. On an error the temporary is removed and the error names path.
// It is for the other files a run keeps beside its checkpoint (metrics, alignment links).
func WriteFile(path string, write func(io.Writer) error) error {
	if err := writeThroughTemp(path, write); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeThroughTemp is WriteFile without the path in its errors.
func writeThroughTemp(path string, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// The name says which file and which process the temporary belongs to, so that RemoveStale can tell one
	// that a killed writer left behind from one being written now.
	tmp, err := os.CreateTemp(dir, tempPrefix(base)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes 0600, too strict for a model file
		return err
	}
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	// Sync the directory so the rename itself survives a crash. The new file is already in place, so a failure
	// here (some file systems refuse to sync directories) is not reported as a failed write.
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// validate checks that f can be written and read back as it is.
func validate(f *File) error {
	if !json.Valid(f.Header) {
		return errors.New("header is not valid JSON")
	}
	if uint64(len(f.Tensors)) > math.MaxUint32 {
		return fmt.Errorf("%d tensors, at most %d fit", len(f.Tensors), uint32(math.MaxUint32))
	}
	seen := make(map[string]bool, len(f.Tensors))
	for _, t := range f.Tensors {
		if err := validateTensor(t); err != nil {
			return err
		}
		if seen[t.Name] {
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
	}
	return nil
}

func validateTensor(t Tensor) error {
	switch {
	case t.Name == "":
		return errors.New("tensor with an empty name")
	case len(t.Name) > math.MaxUint16:
		return fmt.Errorf("tensor %.20q...: name longer than %d bytes", t.Name, math.MaxUint16)
	case len(t.Shape) > math.MaxUint8:
		return fmt.Errorf("tensor %q: %d dimensions, at most %d", t.Name, len(t.Shape), math.MaxUint8)
	case (t.F32 == nil) == (t.F64 == nil):
		return fmt.Errorf("tensor %q: exactly one of F32 and F64 must be non-nil", t.Name)
	}
	dims := make([]uint64, len(t.Shape))
	for i, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
		dims[i] = uint64(d)
	}
	values := len(t.F32)
	if t.F64 != nil {
		values = len(t.F64)
	}
	if n, ok := elements(dims, uint64(values)); !ok || n != uint64(values) {
		return fmt.Errorf("tensor %q: %d values for shape %v", t.Name, values, t.Shape)
	}
	return nil
}

// elements returns the product of dims and true, or false if the product exceeds limit. It cannot overflow.
func elements(dims []uint64, limit uint64) (uint64, bool) {
	for _, d := range dims {
		if d == 0 {
			return 0, true
		}
	}
	n := uint64(1)
	for _, d := range dims {
		if n > limit/d {
			return 0, false
		}
		n *= d
	}
	return n, n <= limit
}

// encoder batches the small fields and the encoded values into one reused buffer, so that w sees a few large
// writes rather than one per value.
type encoder struct {
	w   io.Writer
	buf []byte
	err error
}

func (e *encoder) flush() {
	if e.err == nil && len(e.buf) > 0 {
		_, e.err = e.w.Write(e.buf)
	}
	e.buf = e.buf[:0]
}

// room flushes the buffer unless it has space for n more bytes (n ≤ chunkSize).
func (e *encoder) room(n int) {
	if cap(e.buf)-len(e.buf) < n {
		e.flush()
	}
}

func (e *encoder) bytes(b []byte) {
	if len(b) > chunkSize/2 {
		e.flush()
		if e.err == nil {
			_, e.err = e.w.Write(b)
		}
		return
	}
	e.room(len(b))
	e.buf = append(e.buf, b...)
}

// putValues appends the IEEE 754 bits of values, little-endian, flushing the buffer as it fills.
func putValues[V float32 | float64](e *encoder, values []V) {
	size := int(unsafe.Sizeof(V(0)))
	for len(values) > 0 && e.err == nil {
		e.room(size)
		n := min(len(values), (cap(e.buf)-len(e.buf))/size)
		for _, v := range values[:n] {
			if size == 4 {
				e.buf = binary.LittleEndian.AppendUint32(e.buf, math.Float32bits(float32(v)))
			} else {
				e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(float64(v)))
			}
		}
		values = values[n:]
	}
}

// encode writes everything but the checksum. It trusts f to be valid.
func encode(w io.Writer, f *File) error {
	e := &encoder{w: w, buf: make([]byte, 0, chunkSize)}
	e.buf = append(e.buf, magic...)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, FormatVersion)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(len(f.Header)))
	e.bytes(f.Header)
	e.room(4)
	e.buf = binary.LittleEndian.AppendUint32(e.buf, uint32(len(f.Tensors)))
	for _, t := range f.Tensors {
		e.room(2)
		e.buf = binary.LittleEndian.AppendUint16(e.buf, uint16(len(t.Name)))
		e.bytes([]byte(t.Name))
		e.room(2 + 8*len(t.Shape))
		if t.F64 != nil {
			e.buf = append(e.buf, dtypeFloat64)
		} else {
			e.buf = append(e.buf, dtypeFloat32)
		}
		e.buf = append(e.buf, uint8(len(t.Shape)))
		for _, d := range t.Shape {
			e.buf = binary.LittleEndian.AppendUint64(e.buf, uint64(d))
		}
		putValues(e, t.F32)
		putValues(e, t.F64)
	}
	e.flush()
	return e.err
}

// Read reads the checkpoint at path and verifies it: magic, version, every length and the SHA-256 checksum.
// Errors name the file and what is wrong, e.g. "checkpoint m.ckpt: checksum mismatch (file is corrupt or
// truncated)"; they wrap ErrChecksum or ErrVersion where those apply, and the os error when the file cannot
// be opened.
func Read(path string) (*File, error) {
	file, size, err := open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	f, err := decode(file, size)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return f, nil
}

// open opens the checkpoint file at path for Read and ReadHeader and returns its size; a directory is refused.
func open(path string) (*os.File, int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: %w", err)
	}
	info, err := file.Stat()
	if err == nil && info.IsDir() {
		err = fmt.Errorf("checkpoint %s: is a directory, not a checkpoint file", path)
	} else if err != nil {
		err = fmt.Errorf("checkpoint: %w", err)
	}
	if err != nil {
		file.Close()
		return nil, 0, err
	}
	return file, info.Size(), nil
}

// decode reads a whole checkpoint of size bytes from r. It parses while hashing, then checks the checksum. A
// checksum mismatch is reported in preference to a parse error, because it is the root cause: a flipped bit
// in a length field shows up as a nonsensical length, but the honest diagnosis is a corrupt file.
func decode(r io.Reader, size int64) (*File, error) {
	head, err := readPrefix(r, size)
	if err != nil {
		return nil, err
	}
	if size < int64(prefixLen+sha256.Size) {
		return nil, fmt.Errorf("file is truncated (%d bytes)", size)
	}

	sum := sha256.New()
	sum.Write(head)
	bodyLen := size - int64(prefixLen) - sha256.Size
	d := &decoder{
		r:         bufio.NewReaderSize(io.TeeReader(io.LimitReader(r, bodyLen), sum), chunkSize),
		remaining: uint64(bodyLen),
	}
	f, parseErr := d.file()
	// Hash whatever parsing left unread so the checksum covers the whole body even when parsing stopped early.
	if _, err := io.Copy(io.Discard, d.r); err != nil {
		return nil, err
	}
	if err := checkSum(r, sum); err != nil {
		return nil, err
	}
	if parseErr != nil {
		return nil, parseErr
	}
	return f, nil
}

// readPrefix reads the magic and the version from the start of r, a file of size bytes, and checks them.
func readPrefix(r io.Reader, size int64) ([]byte, error) {
	head := make([]byte, prefixLen)
	n, _ := io.ReadFull(r, head)
	head = head[:n]
	switch {
	case len(head) < len(magic) && bytes.HasPrefix([]byte(magic), head):
		return nil, fmt.Errorf("file is truncated (%d bytes)", size)
	case !bytes.HasPrefix(head, []byte(magic)):
		return nil, errors.New("not an attend checkpoint (bad magic)")
	case len(head) < prefixLen:
		return nil, fmt.Errorf("file is truncated (%d bytes)", size)
	}
	if version := binary.LittleEndian.Uint32(head[len(magic):]); version != FormatVersion {
		return nil, fmt.Errorf("%w %d (this build reads version %d)", ErrVersion, version, FormatVersion)
	}
	return head, nil
}

// checkSum reads the trailer from r and compares it with sum.
func checkSum(r io.Reader, sum hash.Hash) error {
	trailer := make([]byte, sha256.Size)
	if _, err := io.ReadFull(r, trailer); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("file shrank while being read: %w", ErrChecksum)
		}
		return err
	}
	if !bytes.Equal(sum.Sum(nil), trailer) {
		return ErrChecksum
	}
	return nil
}

// decoder reads the body (everything between the version and the checksum), tracking how many bytes are left
// so that no length read from the file makes it allocate more than the file could hold.
type decoder struct {
	r         *bufio.Reader
	remaining uint64
	scratch   []byte
}

var errTruncated = errors.New("unexpected end of data")

// next returns the next n bytes, which stay valid until the next call; n is at most chunkSize.
func (d *decoder) next(n int) ([]byte, error) {
	if cap(d.scratch) < n {
		d.scratch = make([]byte, n)
	}
	return d.scratch[:n], d.fill(d.scratch[:n])
}

// take returns the next n bytes in a new slice, failing before it allocates if fewer than n are left.
func (d *decoder) take(n uint64) ([]byte, error) {
	if n > d.remaining || n > math.MaxInt {
		return nil, errTruncated
	}
	b := make([]byte, n)
	return b, d.fill(b)
}

// fill reads the next len(b) bytes into b, or fails with errTruncated if fewer are left.
func (d *decoder) fill(b []byte) error {
	if uint64(len(b)) > d.remaining {
		return errTruncated
	}
	if _, err := io.ReadFull(d.r, b); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errTruncated
		}
		return err
	}
	d.remaining -= uint64(len(b))
	return nil
}

// uint reads a little-endian unsigned integer of size bytes (1, 2, 4 or 8).
func (d *decoder) uint(size int) (uint64, error) {
	b, err := d.next(size)
	if err != nil {
		return 0, err
	}
	var x uint64
	for i := size - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x, nil
}

func (d *decoder) file() (*File, error) {
	headerLen, err := d.uint(8)
	if err != nil {
		return nil, fmt.Errorf("header length: %w", err)
	}
	if headerLen > d.remaining {
		return nil, fmt.Errorf("header length %d exceeds the %d bytes left in the file", headerLen, d.remaining)
	}
	header, err := d.take(headerLen)
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	f := &File{Header: header}
	if !json.Valid(f.Header) {
		return nil, errors.New("header is not valid JSON")
	}
	count, err := d.uint(4)
	if err != nil {
		return nil, fmt.Errorf("tensor count: %w", err)
	}
	const minTensorLen = 2 + 1 + 1 + 1 // name length, one-byte name, dtype, ndim
	if count > d.remaining/minTensorLen {
		return nil, fmt.Errorf("%d tensors cannot fit in the %d bytes left in the file", count, d.remaining)
	}
	// A Tensor is far larger than its smallest encoding, so trust the count only so far when preallocating.
	f.Tensors = make([]Tensor, 0, min(count, 1024))
	seen := make(map[string]bool, min(count, 1024))
	for i := range int(count) {
		t, err := d.tensor()
		if err != nil {
			return nil, fmt.Errorf("tensor %d of %d: %w", i+1, count, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		f.Tensors = append(f.Tensors, t)
	}
	if d.remaining != 0 {
		return nil, fmt.Errorf("%d unexpected bytes after the last tensor", d.remaining)
	}
	return f, nil
}

func (d *decoder) tensor() (Tensor, error) {
	nameLen, err := d.uint(2)
	if err != nil {
		return Tensor{}, fmt.Errorf("name length: %w", err)
	}
	if nameLen == 0 {
		return Tensor{}, errors.New("empty name")
	}
	name, err := d.next(int(nameLen)) // at most 64 KiB
	if err != nil {
		return Tensor{}, fmt.Errorf("name: %w", err)
	}
	t := Tensor{Name: string(name)}
	dtype, err := d.uint(1)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: dtype: %w", t.Name, err)
	}
	var elemSize uint64
	switch dtype {
	case dtypeFloat32:
		elemSize = 4
	case dtypeFloat64:
		elemSize = 8
	default:
		return Tensor{}, fmt.Errorf("tensor %q: unknown dtype %d", t.Name, dtype)
	}
	ndim, err := d.uint(1)
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: rank: %w", t.Name, err)
	}
	dims := make([]uint64, ndim)
	t.Shape = make([]int, ndim)
	for i := range dims {
		if dims[i], err = d.uint(8); err != nil {
			return Tensor{}, fmt.Errorf("tensor %q: shape: %w", t.Name, err)
		}
		if dims[i] > math.MaxInt {
			return Tensor{}, fmt.Errorf("tensor %q: dimension %d is too large", t.Name, dims[i])
		}
		t.Shape[i] = int(dims[i])
	}
	n, ok := elements(dims, d.remaining/elemSize)
	if !ok {
		return Tensor{}, fmt.Errorf("tensor %q: shape %v needs more than the %d bytes left in the file",
			t.Name, t.Shape, d.remaining)
	}
	if dtype == dtypeFloat32 {
		t.F32 = make([]float32, n)
		err = getValues(d, t.F32)
	} else {
		t.F64 = make([]float64, n)
		err = getValues(d, t.F64)
	}
	if err != nil {
		return Tensor{}, fmt.Errorf("tensor %q: values: %w", t.Name, err)
	}
	return t, nil
}

// getValues fills values from their little-endian IEEE 754 bits.
func getValues[V float32 | float64](d *decoder, values []V) error {
	size := int(unsafe.Sizeof(V(0)))
	for len(values) > 0 {
		n := min(len(values), chunkSize/size)
		b, err := d.next(size * n)
		if err != nil {
			return err
		}
		for i := range values[:n] {
			if size == 4 {
				values[i] = V(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
			} else {
				values[i] = V(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
			}
		}
		values = values[n:]
	}
	return nil
}

// HasMagic reports whether head, the first bytes of a file, starts as every checkpoint does: the magic, or a
// piece of it when head is shorter. The rest is not checked (see Read).
func HasMagic(head []byte) bool {
	n := min(len(head), len(magic))
	return n > 0 && string(head[:n]) == magic[:n]
}

// ReadHeader returns the JSON header of the checkpoint at path without reading its tensors or checking its
// checksum: a quick look at what a file holds (the run and its position), not a verified read (see Read).
func ReadHeader(path string) ([]byte, error) {
	file, size, err := open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if _, err := readPrefix(file, size); err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	length := make([]byte, 8)
	if _, err := io.ReadFull(file, length); err != nil {
		return nil, fmt.Errorf("checkpoint %s: file is truncated (%d bytes)", path, size)
	}
	n := binary.LittleEndian.Uint64(length)
	if n > uint64(size) {
		return nil, fmt.Errorf("checkpoint %s: header length %d exceeds the file's %d bytes", path, n, size)
	}
	header := make([]byte, n)
	if _, err := io.ReadFull(file, header); err != nil {
		return nil, fmt.Errorf("checkpoint %s: header: %w", path, err)
	}
	if !json.Valid(header) {
		return nil, fmt.Errorf("checkpoint %s: header is not valid JSON", path)
	}
	return header, nil
}
