//go:build !linux

package app

// machineMemory is 0 where attend does not know how to find the machine's memory (the fallback then applies).
func machineMemory() int64 { return 0 }
