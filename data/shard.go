package data

import "fmt"

// Shard returns part i of n of the batch's real rows, for data-parallel training where n processes share every
// batch: rows [i·Real/n, (i+1)·Real/n), in order, with the batch's padded lengths SrcLen and TgtLen kept (so
// every process compiles the same shapes) and its own Index. A shard may have no rows when Real < n. It panics
// unless 0 <= i < n.
func (b *Batch) Shard(i, n int) Batch {
	if n < 1 || i < 0 || i >= n {
		panic(fmt.Sprintf("data: Shard(%d, %d)", i, n))
	}
	lo, hi := ShardBounds(b.Real, i, n)
	rows := hi - lo
	s := Batch{Rows: rows, Real: rows, SrcLen: b.SrcLen, TgtLen: b.TgtLen,
		SrcLengths: append([]int(nil), b.SrcLengths[lo:hi]...), Src: timeMajorRows(b.Src, b.Rows, b.SrcLen, lo, hi)}
	if b.Index != nil { // (a batch made by hand may have none)
		s.Index = append([]int(nil), b.Index[lo:hi]...)
	}
	if b.TgtOut != nil {
		s.TgtIn = timeMajorRows(b.TgtIn, b.Rows, b.TgtLen, lo, hi)
		s.TgtOut = timeMajorRows(b.TgtOut, b.Rows, b.TgtLen, lo, hi)
	}
	return s
}

// timeMajorRows copies rows [lo, hi) of a time-major (steps, rows) matrix.
func timeMajorRows(m []int, rows, steps, lo, hi int) []int {
	out := make([]int, 0, steps*(hi-lo))
	for t := 0; t < steps; t++ {
		out = append(out, m[t*rows+lo:t*rows+hi]...)
	}
	return out
}

// ShardRows is the number of rows of part i of n of a batch of real rows (Batch.Shard).
func ShardRows(real, i, n int) int {
	lo, hi := ShardBounds(real, i, n)
	return hi - lo
}

// ShardBounds are the rows [lo, hi) of the batch that part i of n of a batch of real rows takes (Batch.Shard).
func ShardBounds(real, i, n int) (lo, hi int) { return i * real / n, (i + 1) * real / n }
