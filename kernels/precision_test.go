package kernels

import "testing"

func TestParsePrecision(t *testing.T) {
	for _, s := range []string{"auto", "float32", "bf16", "bf16x3"} {
		if p, err := ParsePrecision(s); err != nil || string(p) != s {
			t.Errorf("ParsePrecision(%q) = %q, %v", s, p, err)
		}
	}
	if p, err := ParsePrecision(""); err != nil || p != PrecisionAuto {
		t.Errorf("ParsePrecision(\"\") = %q, %v; want auto", p, err)
	}
	for _, s := range []string{"fp32", "BF16", "float64", " auto"} {
		if _, err := ParsePrecision(s); err == nil {
			t.Errorf("ParsePrecision(%q) accepted", s)
		}
	}
}

// TestChoose checks each setting against what the CPU can do: float32 always runs; bf16 needs AMX or
// AVX512-BF16; bf16x3 needs AMX; auto follows PrecisionAuto's rule.
func TestChoose(t *testing.T) {
	amx := amxPermit() == nil
	p, err := Choose(PrecisionFloat32)
	if err != nil || !p.Float32() || p.AMX() {
		t.Errorf("Choose(float32) = %v, %v", p, err)
	}
	p, err = Choose(PrecisionBF16)
	if ok := amx || hasBF16; (err == nil) != ok || ok && (p.Format() != BF16 || p.AMX() != amx) {
		t.Errorf("Choose(bf16) = %v, %v with AMX %v, AVX512-BF16 %v", p, err, amx, hasBF16)
	}
	p, err = Choose(PrecisionBF16x3)
	if (err == nil) != amx || amx && (p.Format() != BF16x3 || !p.AMX()) {
		t.Errorf("Choose(bf16x3) = %v, %v with AMX %v", p, err, amx)
	}
	want := Float32
	switch {
	case amx:
		want = BF16x3
	case bf16Faster:
		want = BF16
	}
	if p, err := Choose(PrecisionAuto); err != nil || p.Format() != want {
		t.Errorf("Choose(auto) = %v, %v; want %v", p, err, want)
	}
	if _, err := Choose("half"); err == nil {
		t.Error("Choose(half) accepted")
	}
	if (Products{}) != Float32Products() || Float32Products().String() != "float32 products" {
		t.Errorf("zero Products = %v", Float32Products())
	}
}
