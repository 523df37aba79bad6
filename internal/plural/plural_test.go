package plural

import "testing"

func TestCount(t *testing.T) {
	for _, c := range []struct {
		n      int
		noun   string
		plural []string
		want   string
	}{
		{0, "sentence", nil, "0 sentences"},
		{1, "sentence", nil, "1 sentence"},
		{2, "sentence", nil, "2 sentences"},
		{-1, "step", nil, "-1 step"},
		{1, "batch", []string{"batches"}, "1 batch"},
		{7, "batch", []string{"batches"}, "7 batches"},
	} {
		if got := Count(c.n, c.noun, c.plural...); got != c.want {
			t.Errorf("Count(%d, %q, %q) = %q, want %q", c.n, c.noun, c.plural, got, c.want)
		}
	}
}
