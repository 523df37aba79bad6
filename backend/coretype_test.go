package backend

import "testing"

func TestBetterCoreType(t *testing.T) {
	for _, c := range []struct {
		core  string
		level int
		want  string // "" for no change
	}{
		{"Prescott", levelAVX512, "SkylakeX"}, // an AVX-512 CPU this OpenBLAS does not know
		{"Prescott", levelAVX2, "Haswell"},
		{"Nehalem", levelAVX, "Sandybridge"},
		{"Haswell", levelAVX512, "SkylakeX"},
		{"Prescott", levelSSE, ""}, // the CPU has nothing better
		{"SkylakeX", levelAVX512, ""},
		{"Cooperlake", levelAVX512, ""},
		{"Zen", levelAVX2, ""},
		{"SkylakeX", levelAVX2, ""},  // never downgrade
		{"NEOVERSEN1", levelSSE, ""}, // not an x86 core type
		{"", levelAVX512, ""},
	} {
		got, ok := betterCoreType(c.core, c.level)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("betterCoreType(%q, level %d) = %q, %v; want %q", c.core, c.level, got, ok, c.want)
		}
	}
}
