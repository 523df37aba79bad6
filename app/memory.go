package app

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model"
)

// MachineMemory is the memory a new run may take, in bytes, and where the figure comes from: MemAvailable of
// /proc/meminfo (MemTotal on kernels before 3.14, which lack it), or the room left under the cgroup's
// memory.max when that is less (a container's limit). ok is false where neither can be read (not Linux): the
// memory is then not checked.
func MachineMemory() (n int64, source string, ok bool) {
	raw, _ := data.ReadFile("/proc/meminfo")
	n, source, ok = available(parseMeminfo(raw))
	if limit, err := data.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		used, _ := data.ReadFile("/sys/fs/cgroup/memory.current")
		if room, cok := cgroupRoom(limit, used); cok && (!ok || room < n) {
			return room, "the room under the cgroup's memory.max", true
		}
	}
	return n, source, ok
}

// machineMemory is the memory this process may use, in bytes: the machine's (MemTotal of /proc/meminfo), or the
// limit of its control group (cgroup v2, as containers set it) when that is lower; 0 when neither can be read
// (not Linux: the fallback then applies).
func machineMemory() int64 {
	raw, _ := data.ReadFile("/proc/meminfo")
	total := parseMeminfo(raw)["MemTotal"]
	if limit, err := data.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if room, ok := cgroupRoom(limit, nil); ok && room > 0 && (total == 0 || room < total) {
			total = room
		}
	}
	return total
}

// parseMeminfo reads the sizes that the text of /proc/meminfo gives, in bytes, by key ("MemTotal").
func parseMeminfo(text []byte) map[string]int64 {
	sizes := map[string]int64{}
	for _, line := range strings.Split(string(text), "\n") {
		key, rest, found := strings.Cut(line, ":")
		fields := strings.Fields(rest)
		if !found || len(fields) == 0 {
			continue
		}
		if kb, err := strconv.ParseInt(fields[0], 10, 64); err == nil && kb >= 0 {
			sizes[key] = kb * 1024
		}
	}
	return sizes
}

// available is the memory a new run may take by the sizes of /proc/meminfo (parseMeminfo): MemAvailable, or
// lacking it MemTotal, with where the figure comes from; ok is false when neither is there.
func available(sizes map[string]int64) (n int64, source string, ok bool) {
	if n, ok := sizes["MemAvailable"]; ok {
		return n, "MemAvailable in /proc/meminfo", true
	}
	if n := sizes["MemTotal"]; n > 0 {
		return n, "MemTotal in /proc/meminfo", true
	}
	return 0, "", false
}

// cgroupRoom is memory.max less memory.current of a cgroup v2; ok is false for "max" (no limit) or text that is
// not a number.
func cgroupRoom(limit, used []byte) (int64, bool) {
	ceiling, err := strconv.ParseInt(string(bytes.TrimSpace(limit)), 10, 64)
	if err != nil {
		return 0, false
	}
	cur, err := strconv.ParseInt(string(bytes.TrimSpace(used)), 10, 64)
	if err != nil {
		cur = 0
	}
	return max(0, ceiling-cur), true
}

// checkMemory compares a run's estimated memory need with what the machine has (avail bytes, per source;
// known false: not checked) and refuses a run that cannot fit, with both figures; with force it only warns on w.
// resumed says the weights and Adam's moments are already loaded, so they are not counted again.
func checkMemory(w io.Writer, est model.MemoryEstimate, avail int64, source string, known, resumed, force bool) error {
	need := est.Total()
	if resumed {
		need -= est.Weights + est.Moments
	}
	if !known || need <= avail {
		return nil
	}
	msg := fmt.Sprintf("training this model needs %s, more than the %s this machine has (%s)", est, model.Bytes(avail), source)
	if resumed {
		msg = fmt.Sprintf("training on needs %s more than the loaded checkpoint (%s), more than the %s this machine has (%s)",
			model.Bytes(need), est, model.Bytes(avail), source)
	}
	if force {
		fmt.Fprintf(w, "warning: %s; going on as --force-memory asks\n", msg)
		return nil
	}
	return fmt.Errorf("%s: make the model smaller (model.emb, model.enc_hidden, model.dec_hidden, model.layers) or the batches "+
		"(data.batch, data.batch_tokens, data.max_len), or give --force-memory to try anyway", msg)
}
