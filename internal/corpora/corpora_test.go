package corpora

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMulti30kSkipsOrFinds: without MULTI30K, or with a directory that lacks a file asked for, the test is
// skipped; with one that has the files, their directory comes back.
func TestMulti30kSkipsOrFinds(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "train.de"), []byte("ein Hund\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, env string
		files     []string
		skipped   bool
	}{
		{"unset", "", nil, true},
		{"a file missing", d, []string{"train.de", "train.en"}, true},
		{"every file there", d, []string{"train.de"}, false},
		{"no file asked for", d, nil, false},
	} {
		t.Setenv("MULTI30K", c.env)
		var got string
		skipped := true
		t.Run(c.name, func(t *testing.T) {
			got = Multi30k(t, c.files...)
			skipped = false
		})
		if skipped != c.skipped {
			t.Errorf("%s: skipped %v, want %v", c.name, skipped, c.skipped)
		}
		if !c.skipped && got != d {
			t.Errorf("%s: Multi30k = %q, want %q", c.name, got, d)
		}
	}
}
