// Package corpora finds the public corpora that some tests and benchmarks read, through environment variables:
// a test that needs one gets its directory, or is skipped with a message naming the variable to set.
package corpora

import (
	"os"
	"path/filepath"
	"testing"
)

// Multi30k returns the Multi30k directory named by the environment variable MULTI30K (train, val,
// test_2016_flickr and test_2017_flickr in .de, .en, .fr and .cs, as scripts/get-multi30k.sh writes them), after
// checking that each of files is in it. It skips tb, with a message saying why, when MULTI30K is unset or a file
// is not there.
func Multi30k(tb testing.TB, files ...string) string {
	tb.Helper()
	return dir(tb, "MULTI30K", "the Multi30k directory (scripts/get-multi30k.sh DIR fetches it)", files)
}

// Hansards returns the directory of the English–French Hansards sample with gold alignments named by the
// environment variable HANSARDS, after checking that each of files is in it; it skips tb as Multi30k does.
func Hansards(tb testing.TB, files ...string) string {
	tb.Helper()
	return dir(tb, "HANSARDS", "the English–French Hansards directory (enfr.src-tgt, enfr.dev-gold)", files)
}

// dir is the directory named by the environment variable name (what describes it), or a skip.
func dir(tb testing.TB, name, what string, files []string) string {
	tb.Helper()
	d := os.Getenv(name)
	if d == "" {
		tb.Skipf("set %s to %s", name, what)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			tb.Skipf("%s=%s is not %s: %v", name, d, what, err)
		}
	}
	return d
}
