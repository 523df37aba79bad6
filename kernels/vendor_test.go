//go:build amd64 && !purego && linux

package kernels

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestIsAMDAgreesWithProcCPUInfo holds CPUID's vendor, which decides bf16Faster, to the kernel's vendor_id.
func TestIsAMDAgreesWithProcCPUInfo(t *testing.T) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(key) != "vendor_id" {
			continue
		}
		vendor := strings.TrimSpace(value)
		if got, want := isAMD(), vendor == "AuthenticAMD"; got != want {
			t.Fatalf("isAMD() = %v for vendor_id %q", got, vendor)
		}
		if bf16Faster && !hasBF16 {
			t.Fatal("bf16Faster without AVX512-BF16")
		}
		return
	}
	t.Skip("no vendor_id in /proc/cpuinfo")
}
