package app

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/model"
)

func TestParseMeminfo(t *testing.T) {
	for _, c := range []struct {
		name, text string
		bytes      int64
		source     string
	}{
		{"available", "MemTotal:       24684084 kB\nMemFree:  100 kB\nMemAvailable:   21873760 kB\n", 21873760 * 1024, "MemAvailable"},
		{"an old kernel", "MemTotal:       2048 kB\nMemFree:  100 kB\n", 2048 * 1024, "MemTotal"},
		{"nothing", "Buffers: 3 kB\n", 0, ""},
		{"garbage", "MemAvailable: lots\nMemTotal\n", 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, source, ok := available(parseMeminfo([]byte(c.text)))
			if n != c.bytes || ok != (c.bytes > 0) || !strings.Contains(source, c.source) {
				t.Fatalf("parseMeminfo = %d, %q, %v; want %d and a source naming %q", n, source, ok, c.bytes, c.source)
			}
		})
	}
	for _, c := range []struct {
		limit, used string
		room        int64
		ok          bool
	}{{"max\n", "5\n", 0, false}, {"1000\n", "300\n", 700, true}, {"1000\n", "", 1000, true}, {"100", "300", 0, true}} {
		if room, ok := cgroupRoom([]byte(c.limit), []byte(c.used)); room != c.room || ok != c.ok {
			t.Errorf("cgroupRoom(%q, %q) = %d, %v; want %d, %v", c.limit, c.used, room, ok, c.room, c.ok)
		}
	}
	if runtime.GOOS == "linux" {
		if n, source, ok := MachineMemory(); !ok || n <= 0 || source == "" {
			t.Fatalf("MachineMemory on Linux = %d, %q, %v", n, source, ok)
		}
	}
}

// TestCheckMemory refuses an estimate above the machine's memory with both figures and the way out, warns
// instead with force, counts only what a resumed run has not loaded yet, and checks nothing where the memory
// is unknown.
func TestCheckMemory(t *testing.T) {
	est := model.MemoryEstimate{Params: 1e9, Weights: 4e9, Moments: 8e9, Gradients: 8e9, Activations: 2e9} // 22 GB
	for _, c := range []struct {
		name                  string
		avail                 int64
		known, resumed, force bool
		wantErr, wantWarning  bool
		says                  []string
	}{
		{"fits", 30e9, true, false, false, false, false, nil},
		{"does not fit", 16e9, true, false, false, true, false, []string{"about 22.0 GB", "16.0 GB this machine has (MemAvailable in /proc/meminfo)", "--force-memory", "data.batch"}},
		{"forced", 16e9, true, false, true, false, true, []string{"warning:", "about 22.0 GB", "--force-memory"}},
		{"resumed: the loaded weights and moments count no more", 16e9, true, true, false, false, false, nil},
		{"resumed, and the rest does not fit", 5e9, true, true, false, true, false, []string{"10.0 GB more than the loaded checkpoint", "5.0 GB"}},
		{"unknown memory", 1, false, false, false, false, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var w bytes.Buffer
			err := checkMemory(&w, est, c.avail, "MemAvailable in /proc/meminfo", c.known, c.resumed, c.force)
			if (err != nil) != c.wantErr || (w.Len() > 0) != c.wantWarning {
				t.Fatalf("checkMemory = %v, warning %q; want error %v, warning %v", err, w.String(), c.wantErr, c.wantWarning)
			}
			said := w.String()
			if err != nil {
				said = err.Error()
			}
			for _, s := range c.says {
				if !strings.Contains(said, s) {
					t.Errorf("%q does not say %q", said, s)
				}
			}
		})
	}
}

// TestTrainRefusesAModelLargerThanTheMachine trains with every width at the top of its range (each valid): the
// run must be refused before anything is allocated or written, with the estimate.
func TestTrainRefusesAModelLargerThanTheMachine(t *testing.T) {
	if _, _, ok := MachineMemory(); !ok {
		t.Skip("this system does not say how much memory it has")
	}
	dir := t.TempDir()
	train, _ := writeCorpus(t, dir, 1)
	cfg := tinyTrainConfig()
	cfg.Model.Emb, cfg.Model.EncHidden, cfg.Model.DecHidden = 65536, 65536, 65536
	var out bytes.Buffer
	before := liveHeapBytes()
	_, err := Train(context.Background(), TrainRequest{Config: cfg, Train: train, Out: dir + "/m.ckpt", Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), "training this model needs about") || !strings.Contains(err.Error(), "TB") {
		t.Fatalf("Train = %v, want a refusal with the estimate in terabytes", err)
	}
	if grew := liveHeapBytes() - before; grew > 1<<28 {
		t.Fatalf("the refused run left %d bytes allocated", grew)
	}
}

func liveHeapBytes() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
