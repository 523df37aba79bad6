package kernels

import (
	"runtime"
	"sync"
)

// Parallel splits [0, n) into one contiguous range per worker and runs f on every range concurrently, returning
// when all are done. It uses at most GOMAXPROCS workers, and fewer when a worker would get less than grain items
// (one worker, on the calling goroutine, when n < 2·grain), so small jobs are not slowed by the hand-off.
//
// f must only write what its own range owns: callers that reduce (a sum, a norm) give each range its own
// partial result and combine them afterwards in a fixed order, or split so that each result belongs to one
// range, so that the outcome does not depend on the number of workers.
func Parallel(n, grain int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/max(grain, 1))
	if workers <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(n*w/workers, n*(w+1)/workers)
	}
	f(0, n/workers)
	wg.Wait()
}
