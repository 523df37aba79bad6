package data

import (
	"fmt"
	"testing"
)

// TestShardsPartitionTheBatch cuts a batch into n shards for several n and checks that the shards hold every
// real row exactly once, in order, with the batch's ids and lengths and its padded shape.
func TestShardsPartitionTheBatch(t *testing.T) {
	var examples []Example
	for i := 0; i < 7; i++ {
		src := make([]int, 1+i%4)
		for j := range src {
			src[j] = 10 + 10*i + j
		}
		examples = append(examples, Example{Src: src, Tgt: []int{100 + i, 200 + i}[:1+i%2]})
	}
	b := MakeBatches(examples, BatchOptions{BatchSize: 7}, nil)[0]
	for _, n := range []int{1, 2, 3, 7, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			next := 0
			for i := 0; i < n; i++ {
				s := b.Shard(i, n)
				if s.SrcLen != b.SrcLen || s.TgtLen != b.TgtLen || s.Rows != s.Real || len(s.Src) != s.Rows*s.SrcLen {
					t.Fatalf("shard %d: shape %d×%d/%d, rows %d/%d", i, s.SrcLen, s.TgtLen, len(s.Src), s.Rows, s.Real)
				}
				for r := 0; r < s.Rows; r++ {
					if s.Index[r] != b.Index[next] || s.SrcLengths[r] != b.SrcLengths[next] {
						t.Fatalf("shard %d row %d is not batch row %d", i, r, next)
					}
					for step := 0; step < b.SrcLen; step++ {
						if s.Src[step*s.Rows+r] != b.Src[step*b.Rows+next] {
							t.Fatalf("shard %d row %d source differs at %d", i, r, step)
						}
					}
					for step := 0; step < b.TgtLen; step++ {
						if s.TgtIn[step*s.Rows+r] != b.TgtIn[step*b.Rows+next] || s.TgtOut[step*s.Rows+r] != b.TgtOut[step*b.Rows+next] {
							t.Fatalf("shard %d row %d target differs at %d", i, r, step)
						}
					}
					next++
				}
			}
			if next != b.Real {
				t.Fatalf("the shards hold %d rows, the batch %d", next, b.Real)
			}
		})
	}
}
