package kernels

import (
	"fmt"
)

// Precision is a setting of train.precision and of translate's, serve's and heatmap's --precision: which number
// format the products should use. Choose turns it, with what the CPU can do, into the Products every caller uses.
type Precision string

// The settings of Precision.
const (
	// PrecisionAuto picks the fastest products here that keep float32's quality: bfloat16x3 where Intel's AMX
	// runs, bfloat16 on AMD's CPUs with AVX512-BF16 (Zen 4 and later), float32 elsewhere. (Intel's AVX512-BF16
	// without AMX was measured slower than float32 FMAs, so auto keeps float32 there.)
	PrecisionAuto Precision = "auto"
	// PrecisionFloat32 keeps every product in float32: the bit-for-bit reference.
	PrecisionFloat32 Precision = "float32"
	// PrecisionBF16 multiplies the output layer in bfloat16 (one rounding of each operand, float32 sums), on AMX
	// or AVX512-BF16; search rescores near-best words exactly.
	PrecisionBF16 Precision = "bf16"
	// PrecisionBF16x3 multiplies the output layer and the recurrent products in bfloat16x3 (each operand split
	// into three bfloat16 parts; about float32's error) on AMX only.
	PrecisionBF16x3 Precision = "bf16x3"
)

// Precisions lists the settings of Precision, auto first.
func Precisions() []string {
	return []string{string(PrecisionAuto), string(PrecisionFloat32), string(PrecisionBF16), string(PrecisionBF16x3)}
}

// ParsePrecision returns the setting s names, or an error listing the settings. The empty string is auto.
func ParsePrecision(s string) (Precision, error) {
	if s == "" {
		return PrecisionAuto, nil
	}
	switch p := Precision(s); p {
	case PrecisionAuto, PrecisionFloat32, PrecisionBF16, PrecisionBF16x3:
		return p, nil
	}
	return "", fmt.Errorf("precision %q: want auto, float32, bf16 or bf16x3", s)
}

// Format is the number format that chosen products multiply in.
type Format int

// The formats of Products.
const (
	Float32 Format = iota // float32 products (OpenBLAS, gonum or PackedGemm)
	BF16                  // bfloat16 operands, float32 sums (AMX tiles or VDPBF16PS)
	BF16x3                // bfloat16x3 operands, float32 sums (AMX tiles)
)

// String names the format as the settings do.
func (f Format) String() string {
	switch f {
	case BF16:
		return "bf16"
	case BF16x3:
		return "bf16x3"
	}
	return "float32"
}

// Products are the products chosen once, from a Precision and the CPU: every caller that multiplies asks this
// value instead of testing the CPU itself. The zero value is float32 products.
type Products struct {
	format Format
	amx    bool // bfloat16 products run on AMX's tile registers (else on VDPBF16PS)
}

// Float32Products returns float32 products, which every CPU runs.
func Float32Products() Products { return Products{} }

// Choose returns the products setting p asks for on this CPU: auto as PrecisionAuto says; bf16 where AMX or
// AVX512-BF16 runs; bf16x3 where AMX runs. It refuses a setting the CPU cannot do, saying why.
func Choose(p Precision) (Products, error) {
	amx := amxPermit()
	switch p {
	case PrecisionAuto, "":
		switch {
		case amx == nil:
			return Products{format: BF16x3, amx: true}, nil
		case bf16Faster:
			return Products{format: BF16}, nil
		}
		return Products{}, nil
	case PrecisionFloat32:
		return Products{}, nil
	case PrecisionBF16:
		if amx == nil {
			return Products{format: BF16, amx: true}, nil
		}
		if hasBF16 {
			return Products{format: BF16}, nil
		}
		return Products{}, fmt.Errorf("precision bf16: this CPU has neither AMX (%v) nor AVX512-BF16; use float32 or auto", amx)
	case PrecisionBF16x3:
		if amx == nil {
			return Products{format: BF16x3, amx: true}, nil
		}
		return Products{}, fmt.Errorf("precision bf16x3 needs Intel AMX: %w; use bf16, float32 or auto", amx)
	default:
		_, err := ParsePrecision(string(p)) // an error: every setting it accepts has its case above
		return Products{}, err
	}
}

// Format is the number format the products multiply in.
func (p Products) Format() Format { return p.format }

// Float32 reports whether every product is float32: the bit-for-bit reference.
func (p Products) Float32() bool { return p.format == Float32 }

// AMX reports whether the bfloat16 products run on AMX's tile registers (false for float32 products, and for
// bfloat16 ones on AVX512-BF16's VDPBF16PS).
func (p Products) AMX() bool { return p.amx }

// PacksWeights reports whether single-threaded float32 products by weights packed once for many calls run on a
// PackedGemm here (PackWeights): where AVX-512 runs, unless the products are bfloat16x3, whose recurrent
// products pack their weights on AMX instead.
func (p Products) PacksWeights() bool { return p.format != BF16x3 && hasAVX512 }

// OutputBytes is the scratch memory that the output layers of workers workers take in these products beyond
// float32's, for in inputs, v words and chunks of chunk rows: none for float32 products; in bfloat16 one packing
// of the weights both ways (shared) and each worker's chunk operands, two bfloat16s a value in bfloat16x3. It
// leaves out a team's rows rounded for AMX and its shares of dx, about (workers+1) × the rows × in float32s.
func (p Products) OutputBytes(in, v, chunk, workers int) int64 {
	if p.Float32() {
		return 0
	}
	in, v, chunk = amxRoundUp(in), amxRoundUp(v), amxRoundUp(chunk)
	bytes := int64(2 * (2*in*v + workers*(2*chunk*in+2*chunk*v)))
	if p.format == BF16x3 {
		return 2 * bytes
	}
	return bytes
}

// PackedWeightBytes is the memory of a (k, n) weight matrix packed both ways for the products of workers
// workers (PackWeights): in bfloat16x3 one packing on AMX for all of them, two bfloat16s a value; else,
// with several workers where PacksWeights, each worker's PackedGemm, float32 in panels of 48 columns; else none.
func (p Products) PackedWeightBytes(k, n, workers int64) int64 {
	switch {
	case p.format == BF16x3:
		return 2 * 2 * 2 * k * n
	case workers > 1 && p.PacksWeights():
		panels := func(cols int64) int64 { return (cols + packedCols - 1) / packedCols * packedCols }
		return workers * 4 * (k*panels(n) + n*panels(k))
	}
	return 0
}

// WeightGradientBytes is the memory of one worker's operands for a weight gradient xᵀ·dy in these products, x
// (rows, in) and dy (rows, out) (Multiplier.AMXProduct): in bfloat16x3 both split, padded to whole blocks; else none.
func (p Products) WeightGradientBytes(rows, in, out int64) int64 {
	if p.format != BF16x3 {
		return 0
	}
	up := func(x int64) int64 { return (x + amxBlock - 1) / amxBlock * amxBlock }
	return 2 * 2 * up(rows) * (up(in) + up(out))
}

// String describes the products in a few words, for `attend version`, a run's header and its arithmetic
// (Progress.Arithmetic, which checkpoints of earlier versions recorded in the same words): "float32 products",
// "bfloat16 products on AVX512-BF16", "bfloat16x3 products on AMX".
func (p Products) String() string {
	switch {
	case p.format == Float32:
		return "float32 products"
	case p.format == BF16x3: // bfloat16x3 runs on AMX only
		return "bfloat16x3 products on AMX"
	case p.amx:
		return "bfloat16 products on AMX"
	}
	return "bfloat16 products on AVX512-BF16"
}

// Here describes, for `attend version`, the products precision auto chooses on this CPU, and whether AMX runs
// here or why not: two lines.
func Here() string {
	auto, _ := Choose(PrecisionAuto) // auto always has a choice
	amx := "bfloat16 products on the tile registers"
	if err := amxPermit(); err != nil {
		amx = fmt.Sprintf("not used (%v)", err)
	}
	return fmt.Sprintf("products: %s (precision auto: train.precision, --precision)\nAMX: %s", auto, amx)
}
