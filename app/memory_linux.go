package app

import (
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/data"
	"golang.org/x/sys/unix"
)

// machineMemory is the memory this process may use, in bytes: the machine's, or the limit of its control group
// (cgroup v2, as containers set it) when that is lower; 0 when neither can be read.
func machineMemory() int64 {
	var info unix.Sysinfo_t
	var total int64
	if unix.Sysinfo(&info) == nil {
		total = int64(info.Totalram) * int64(info.Unit)
	}
	if raw, err := data.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if limit, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err == nil && limit > 0 && (total == 0 || limit < total) {
			total = limit
		}
	}
	return total
}
