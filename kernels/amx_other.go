//go:build !linux || !amd64 || purego

package kernels

import "errors"

// amxPermit reports that tile instructions are not used in this build: AMX is wired up only on linux/amd64.
func amxPermit() error { return errors.New("kernels: AMX is used only on linux/amd64 without purego") }

// amxStrip is never called where amxPermit fails.
func amxStrip(cfg *[64]byte, a *uint16, lda int, b *uint32, panel int, c *float32, ldc int, kBlocks, mBlocks int) {
	panic("kernels: amxStrip without AMX")
}
