package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
)

// Store holds the pairs of a parallel corpus as token ids, compactly: each id as a varint (one byte for the
// first 128 distinct tokens, two up to 16,384, …), each side's length in two bytes, and where every 16th pair
// starts; about 1.5 bytes a token and 4.5 a pair in all. The ids are kept in memory while they fit a budget and
// in a file on disk beyond it, read back by position. A Store is a Source: batches are cut from it as from a
// slice of examples, with the same result. It is safe for concurrent reads; Close releases its file.
type Store struct {
	n              int
	srcLen, tgtLen []uint16
	// block[k] is the byte offset of pair k·storeBlock; the last entry is the size of all the ids.
	block []int64
	mem   arena  // the ids, pair after pair, source then target, when they are in memory
	file  *spill // or on disk
	// srcMap and tgtMap turn the ids as stored into the ids returned (nil: unchanged). Stored ids number the
	// corpus's distinct tokens; the maps give their vocabulary ids, which are known only once every pair is read.
	srcMap, tgtMap []int32
	scratch        sync.Pool // of *[]byte, for reading a block
}

// storeBlock is how many pairs share one stored offset: to read a pair, its block is read and the pairs before
// it in the block are skipped.
const storeBlock = 16

// MaxStoredLen is the most tokens one side of a pair in a Store may have.
const MaxStoredLen = math.MaxUint16

// Len is the number of pairs.
func (s *Store) Len() int { return s.n }

// Lens returns the source and target lengths of pair i.
func (s *Store) Lens(i int) (src, tgt int) { return int(s.srcLen[i]), int(s.tgtLen[i]) }

// OnDisk reports whether the ids are in a file rather than in memory.
func (s *Store) OnDisk() bool { return s.file != nil }

// Tokens is the number of token ids held, both sides of every pair.
func (s *Store) Tokens() int64 {
	var n int64
	for i := range s.n {
		n += int64(s.srcLen[i]) + int64(s.tgtLen[i])
	}
	return n
}

// Bytes is the size of the ids, in memory or on disk.
func (s *Store) Bytes() int64 { return s.block[len(s.block)-1] }

// MemoryBytes estimates the memory the store takes: its lengths, offsets and maps, and its ids unless they are
// on disk.
func (s *Store) MemoryBytes() int64 {
	b := int64(cap(s.srcLen)+cap(s.tgtLen))*2 + int64(cap(s.block))*8 + int64(cap(s.srcMap)+cap(s.tgtMap))*4
	return b + s.mem.size()
}

// Pair returns the ids of pair i's sides, appended to buf[:0] (both sides share its memory).
func (s *Store) Pair(i int, buf []int32) (src, tgt []int32, err error) {
	k := i / storeBlock
	scratch, _ := s.scratch.Get().(*[]byte)
	if scratch == nil {
		scratch = new([]byte)
	}
	defer s.scratch.Put(scratch)
	if *scratch, err = s.readBlocks(k, k+1, *scratch); err != nil {
		return nil, nil, fmt.Errorf("data: pair %d of the corpus on disk: %w", i, err)
	}
	raw := *scratch
	for j := k * storeBlock; j < i; j++ { // skip the pairs before i: a varint ends at a byte below 0x80
		for n := int(s.srcLen[j]) + int(s.tgtLen[j]); n > 0; raw = raw[1:] {
			if len(raw) == 0 {
				return nil, nil, fmt.Errorf("data: pair %d of the corpus: corrupt token ids", i)
			}
			if raw[0] < 0x80 {
				n--
			}
		}
	}
	src, tgt, _, err = s.decode(i, &buf, raw)
	return src, tgt, err
}

// readBlocks reads the ids of blocks [k, l) into buf, grown as needed, and returns it.
func (s *Store) readBlocks(k, l int, buf []byte) ([]byte, error) {
	buf = slices.Grow(buf[:0], int(s.block[l]-s.block[k]))[:s.block[l]-s.block[k]]
	if s.file == nil {
		s.mem.readAt(buf, s.block[k])
		return buf, nil
	}
	_, err := s.file.f.ReadAt(buf, s.block[k])
	return buf, err
}

// decode decodes pair i, which raw starts with, into *buf (both sides share its memory), maps its ids, and
// returns its sides and the bytes after it.
func (s *Store) decode(i int, buf *[]int32, raw []byte) (src, tgt []int32, rest []byte, err error) {
	ns, nt := int(s.srcLen[i]), int(s.tgtLen[i])
	if *buf, rest, err = decodeIDs((*buf)[:0], raw, ns+nt); err != nil {
		return nil, nil, nil, fmt.Errorf("data: pair %d of the corpus: %w", i, err)
	}
	src, tgt = (*buf)[:ns:ns], (*buf)[ns:]
	mapIDs(src, s.srcMap)
	mapIDs(tgt, s.tgtMap)
	return src, tgt, rest, nil
}

// Example returns pair i as an example of vocabulary ids.
func (s *Store) Example(i int) (Example, error) {
	src, tgt, err := s.Pair(i, make([]int32, 0, int(s.srcLen[i])+int(s.tgtLen[i])))
	if err != nil {
		return Example{}, err
	}
	return Example{Src: widen(src), Tgt: widen(tgt)}, nil
}

func widen(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

func mapIDs(ids, m []int32) {
	if m == nil {
		return
	}
	for i, id := range ids {
		ids[i] = m[id]
	}
}

// decodeIDs appends n varint ids from raw to dst and returns the bytes left.
func decodeIDs(dst []int32, raw []byte, n int) ([]int32, []byte, error) {
	for range n {
		id, size := binary.Uvarint(raw)
		if size <= 0 || id > math.MaxInt32 {
			return dst, raw, errors.New("corrupt token ids")
		}
		dst = append(dst, int32(id))
		raw = raw[size:]
	}
	return dst, raw, nil
}

// Each calls fn with every pair in order, reading a store on disk from start to end, storeChunk blocks at a
// time; the slices are reused from call to call. fn's error stops it and is returned.
func (s *Store) Each(fn func(i int, src, tgt []int32) error) error {
	var raw []byte
	var buf []int32
	for k := 0; k < len(s.block)-1; k += storeChunk {
		l := min(k+storeChunk, len(s.block)-1)
		var err error
		if raw, err = s.readBlocks(k, l, raw); err != nil {
			return fmt.Errorf("data: the corpus on disk: %w", err)
		}
		rest := raw
		for i := k * storeBlock; i < min(l*storeBlock, s.n); i++ {
			var src, tgt []int32
			if src, tgt, rest, err = s.decode(i, &buf, rest); err != nil {
				return err
			}
			if err := fn(i, src, tgt); err != nil {
				return err
			}
		}
	}
	return nil
}

// storeChunk is how many blocks Each reads at a time: 65,536 pairs, a megabyte or two.
const storeChunk = 4096

// Close removes the store's file, if it has one. The store must not be read afterwards.
func (s *Store) Close() error {
	if s.file == nil {
		return nil
	}
	err := s.file.close()
	s.file = nil
	return err
}

// remap makes the ids returned those of the maps.
func (s *Store) remap(srcMap, tgtMap []int32) { s.srcMap, s.tgtMap = srcMap, tgtMap }

// arena is bytes in memory, in chunks of a fixed size, so that growing it never copies it.
type arena struct {
	chunks [][]byte
	n      int64 // bytes written
}

const arenaChunk = 1 << 20

func (a *arena) size() int64 { return int64(len(a.chunks)) * arenaChunk }

func (a *arena) write(p []byte) {
	for len(p) > 0 {
		if a.n == a.size() {
			a.chunks = append(a.chunks, make([]byte, arenaChunk))
		}
		k := copy(a.chunks[a.n/arenaChunk][a.n%arenaChunk:], p)
		a.n += int64(k)
		p = p[k:]
	}
}

// readAt fills p from offset off, which must be within what was written.
func (a *arena) readAt(p []byte, off int64) {
	for len(p) > 0 {
		k := copy(p, a.chunks[off/arenaChunk][off%arenaChunk:])
		p, off = p[k:], off+int64(k)
	}
}

// storeBuilder appends pairs to a new Store, keeping the ids in memory until they pass budget bytes and
// writing them to a file in dir from then on.
type storeBuilder struct {
	s      Store
	budget int64 // bytes of ids kept in memory; <= 0: no limit
	dir    string
	w      *bufio.Writer
	bytes  int64
	raw    []byte
}

// add appends a pair; neither side may be longer than MaxStoredLen.
func (b *storeBuilder) add(src, tgt []int32) error {
	s := &b.s
	if s.n%storeBlock == 0 {
		s.block = append(s.block, b.bytes)
	}
	s.n++
	s.srcLen = append(s.srcLen, uint16(len(src)))
	s.tgtLen = append(s.tgtLen, uint16(len(tgt)))
	b.raw = b.raw[:0]
	for _, ids := range [2][]int32{src, tgt} {
		for _, id := range ids {
			b.raw = binary.AppendUvarint(b.raw, uint64(id))
		}
	}
	b.bytes += int64(len(b.raw))
	if b.w != nil {
		return b.write(b.raw)
	}
	s.mem.write(b.raw)
	if b.budget > 0 && s.mem.n > b.budget {
		return b.spill()
	}
	return nil
}

// spill moves the ids in memory to a new file, to which the pairs still to come are written.
func (b *storeBuilder) spill() error {
	f, err := newSpill(b.dir)
	if err != nil {
		return err
	}
	b.s.file = f
	b.w = bufio.NewWriterSize(f.f, 1<<20)
	mem := b.s.mem
	b.s.mem = arena{}
	for i, c := range mem.chunks {
		if err := b.write(c[:min(arenaChunk, mem.n-int64(i)*arenaChunk)]); err != nil {
			return err
		}
		mem.chunks[i] = nil
	}
	return nil
}

func (b *storeBuilder) write(p []byte) error {
	if _, err := b.w.Write(p); err != nil {
		return fmt.Errorf("data: write the corpus to disk: %w", err)
	}
	return nil
}

// finish returns the store built; after an error it removes the file.
func (b *storeBuilder) finish() (*Store, error) {
	if b.w != nil {
		if err := b.w.Flush(); err != nil {
			b.abort()
			return nil, fmt.Errorf("data: write the corpus to disk: %w", err)
		}
	}
	s := &Store{n: b.s.n, srcLen: b.s.srcLen, tgtLen: b.s.tgtLen, block: append(b.s.block, b.bytes), mem: b.s.mem, file: b.s.file}
	return s, nil
}

// abort removes the file of a store that will not be finished.
func (b *storeBuilder) abort() {
	if b.s.file != nil {
		_ = b.s.file.close()
		b.s.file = nil
	}
}

// spill is the file of a store's ids on disk. It is removed from its directory as soon as it is created, where
// the system allows (Unix), so that it takes no name and goes away with the process however that ends;
// elsewhere Close removes it.
type spill struct {
	f    *os.File
	name string // still to remove on close ("" once removed)
}

func newSpill(dir string) (*spill, error) {
	f, err := os.CreateTemp(dir, ".attend-corpus-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("data: a file for the corpus on disk: %w", err)
	}
	s := &spill{f: f, name: f.Name()}
	if os.Remove(f.Name()) == nil {
		s.name = ""
	}
	return s, nil
}

func (s *spill) close() error {
	err := s.f.Close()
	if s.name != "" {
		err = errors.Join(err, os.Remove(s.name))
	}
	return err
}
