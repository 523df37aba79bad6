package backend

import "golang.org/x/sys/cpu"

// SIMD levels of x86 CPUs, as OpenBLAS's kernels need them.
const (
	levelSSE    = iota // no AVX: OpenBLAS's Prescott … Nehalem kernels
	levelAVX           // Sandybridge
	levelAVX2          // Haswell, Zen
	levelAVX512        // SkylakeX, Cooperlake, SapphireRapids
)

// coreLevel gives the SIMD level of an OpenBLAS x86 core type (a name openblas_get_corename returns), and false
// for a name it does not know.
func coreLevel(core string) (int, bool) {
	switch core {
	case "Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Barcelona", "Opteron", "Opteron_SSE3":
		return levelSSE, true
	case "Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator":
		return levelAVX, true
	case "Haswell", "Zen":
		return levelAVX2, true
	case "SkylakeX", "Cooperlake", "SapphireRapids":
		return levelAVX512, true
	}
	return 0, false
}

// levelCore gives the OpenBLAS core type to ask for at a SIMD level above SSE.
func levelCore(level int) (string, bool) {
	switch level {
	case levelAVX:
		return "Sandybridge", true
	case levelAVX2:
		return "Haswell", true
	case levelAVX512:
		return "SkylakeX", true
	}
	return "", false
}

// cpuLevel is the SIMD level this CPU and operating system support.
func cpuLevel() int {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
		return levelAVX512
	case x.HasAVX2 && x.HasFMA:
		return levelAVX2
	case x.HasAVX:
		return levelAVX
	}
	return levelSSE
}

// betterCoreType returns the core type to ask for, and true, when core, OpenBLAS's choice, is a known x86 core
// type of a lower SIMD level than the CPU's; an unknown name (another architecture, a newer core) gives false.
func betterCoreType(core string, level int) (string, bool) {
	have, known := coreLevel(core)
	if !known || have >= level {
		return "", false
	}
	return levelCore(level)
}
