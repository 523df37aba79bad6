//go:build mpi

package dist

import (
	"sync"
	"testing"
)

// openOnce opens the group once per process: MPI may be initialised only once, and the benchmark function
// runs more than once.
var openOnce = sync.OnceValues(Open)

// BenchmarkSumFloat32 times one gradient sum of the small config's size (6.7 M floats). Run it under mpirun
// with a fixed iteration count, so that every process makes the same calls:
//
//	go test -c -tags mpi -o dist.test ./dist/
//	mpirun --allow-run-as-root --oversubscribe -np 2 ./dist.test -test.run '^$' -test.bench Sum -test.benchtime 20x
func BenchmarkSumFloat32(b *testing.B) {
	g, err := openOnce()
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]float32, 6_700_000)
	b.SetBytes(int64(4 * len(buf)))
	b.ResetTimer()
	for range b.N {
		if err := g.SumFloat32(buf); err != nil {
			b.Fatal(err)
		}
	}
}
