package model

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
	"github.com/attend-nmt/attend/model/checkpoint"
	"go.yaml.in/yaml/v3"
)

// configKeys lists every "section.key" of Config.
func configKeys() []string {
	var keys []string
	top := reflect.TypeOf(Config{})
	for i := range top.NumField() {
		sec := top.Field(i)
		for j := range sec.Type.NumField() {
			keys = append(keys, sec.Tag.Get("yaml")+"."+sec.Type.Field(j).Tag.Get("yaml"))
		}
	}
	return keys
}

// FuzzParseConfig reads any bytes as a YAML config file. A config that parses must be valid and must come back
// unchanged through its own YAML; one that does not must say where: a line number or the key at fault.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{"", "# nothing\n", Small().YAML(), "model:\n  emb: 64\n  cell: gru\n",
		"train:\n  lr: 5e-4\n  epochs: 0\n", "model:\n  hiden: 3\n", "model: [1, 2]\n", "data:\n  batch: 1.5\n",
		"train:\n  clip: .inf\n", "a: &x {b: 1}\nmodel: *x\n", "model:\n\temb: 3\n", "- 1\n- 2\n", "decode:\n  max_len: -1\n"} {
		f.Add([]byte(seed))
	}
	keys := configKeys()
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, _, err := parseConfig(raw)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, "line ") && !strings.Contains(msg, "YAML syntax") &&
				!slices.ContainsFunc(keys, func(k string) bool { return strings.Contains(msg, k) }) {
				t.Fatalf("error %q names neither a line nor a key", msg)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("parsed config does not validate: %v", err)
		}
		again, _, err := parseConfig([]byte(cfg.YAML()))
		if err != nil || again != cfg {
			t.Fatalf("config does not survive its own YAML (%v):\n%s", err, cfg.YAML())
		}
	})
}

// FuzzConfigSet applies any --set argument to the defaults: it fails naming the argument, or changes at most
// the one key it names.
func FuzzConfigSet(f *testing.F) {
	for _, seed := range []string{"model.cell=gru", "train.lr=5e-4", "data.batch=1.5", "nosection", "model.=3",
		".emb=3", "model.emb", "train.seed=-1", "data.lowercase=T", "decode.max_len=99999999999999999999", "model.cell=a=b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, assignment string) {
		cfg := Small()
		if err := cfg.Set(assignment); err != nil {
			if !strings.Contains(err.Error(), "--set ") {
				t.Fatalf("error %q does not name the --set argument", err)
			}
			if cfg != Small() {
				t.Fatal("a failed Set changed the config")
			}
			return
		}
		key, _, _ := strings.Cut(assignment, "=")
		for _, c := range Diff(Small(), cfg) {
			if c.Key != key {
				t.Fatalf("Set(%q) changed %s", assignment, c)
			}
		}
	})
}

// fuzzCheckpoint saves a tiny model and returns the checkpoint's content.
func fuzzCheckpoint(f *testing.F) *checkpoint.File {
	cfg := Small()
	cfg.Model = ModelConfig{Emb: 2, EncHidden: 2, DecHidden: 3, AttnDim: 2, Cell: "gru", Attention: "mlp"}
	src, err := data.NewVocab([]string{data.PadToken, data.UnkToken, data.BOSToken, data.EOSToken, "ein", "haus"})
	if err != nil {
		f.Fatal(err)
	}
	tgt, err := data.NewVocab([]string{data.PadToken, data.UnkToken, data.BOSToken, data.EOSToken, "a", "house"})
	if err != nil {
		f.Fatal(err)
	}
	m, err := New[float32](cfg.Model, src, tgt)
	if err != nil {
		f.Fatal(err)
	}
	for i := range m.Params.Flat() {
		m.Params.Flat()[i] = float32(i%7) / 10
	}
	path := filepath.Join(f.TempDir(), "seed.ckpt")
	best := 1.5
	if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{Epoch: 1, Batch: 2, Step: 9, ElapsedS: 3, BestValidLoss: &best}); err != nil {
		f.Fatal(err)
	}
	file, err := checkpoint.Read(path)
	if err != nil {
		f.Fatal(err)
	}
	return file
}

// FuzzLoad writes a valid tiny checkpoint with its JSON header replaced and one tensor's first dimension
// changed by delta (the checksum made right, so Load must judge the content itself). Load must either fail
// naming the file, or return a model whose config is valid, whose position is one training can resume from,
// whose tensors are the file's, and which translates.
func FuzzLoad(f *testing.F) {
	good := fuzzCheckpoint(f)
	f.Add(good.Header, uint8(0), int8(0))
	f.Add(good.Header, uint8(3), int8(1))
	f.Add(good.Header, uint8(200), int8(-1))
	f.Add([]byte(strings.Replace(string(good.Header), `"Emb":2`, `"Emb":65536`, 1)), uint8(0), int8(0))
	f.Add([]byte(strings.Replace(string(good.Header), `"batch":2`, `"batch":-2`, 1)), uint8(0), int8(0))
	f.Add([]byte(strings.Replace(string(good.Header), `"adam_step":0`, `"adam_step":-1`, 1)), uint8(0), int8(0))
	f.Add([]byte(`{"format":"attend-seq2seq","dtype":"float32"}`), uint8(0), int8(0))
	f.Add([]byte(`null`), uint8(0), int8(0))
	dir := f.TempDir() // one per fuzzing process, whose inputs run one at a time: the files are rewritten
	f.Fuzz(func(t *testing.T, header []byte, which uint8, delta int8) {
		file := &checkpoint.File{Header: header, Tensors: slices.Clone(good.Tensors)}
		if int(which) < len(file.Tensors) && delta != 0 {
			tensor := file.Tensors[which]
			tensor.Shape = slices.Clone(tensor.Shape)
			if tensor.Shape[0] += int(delta); tensor.Shape[0] < 0 {
				return
			}
			n := 1
			for _, d := range tensor.Shape {
				n *= d
			}
			data := make([]float32, n)
			copy(data, tensor.F32)
			tensor.F32 = data
			file.Tensors[which] = tensor
		}
		var encoded bytes.Buffer
		if err := checkpoint.Encode(&encoded, file); err != nil {
			return // not valid JSON: the checkpoint package's own fuzzing covers unreadable files
		}
		path := filepath.Join(dir, "m.ckpt")
		if err := os.WriteFile(path, encoded.Bytes(), 0o644); err != nil { // Write would sync: too slow here
			t.Fatal(err)
		}
		ck, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name %s", err, path)
			}
			return
		}
		if err := ck.Config.Validate(); err != nil {
			t.Fatalf("loaded an invalid config: %v", err)
		}
		p := ck.Progress
		if p.Epoch < 0 || p.Batch < 0 || p.Step < 0 || p.BadValidations < 0 || ck.Adam.Steps < 0 || !(p.LRScale >= 0 && p.LRScale <= 1) ||
			!(p.ElapsedS >= 0) || math.IsInf(p.ElapsedS, 0) ||
			(p.BestValidLoss != nil && math.IsNaN(*p.BestValidLoss)) {
			t.Fatalf("loaded a position training cannot resume from: %+v, Adam step %d", p, ck.Adam.Steps)
		}
		if len(file.Tensors) != 3*len(ck.Model.Params.List()) {
			t.Fatalf("loaded %d parameters from %d tensors", len(ck.Model.Params.List()), len(file.Tensors))
		}
		for _, param := range ck.Model.Params.List() {
			stored, ok := file.Tensor(param.Name)
			if !ok || !slices.Equal(stored.Shape, param.Shape) || !slices.Equal(stored.F32, param.Data) {
				t.Fatalf("parameter %s is not the file's", param.Name)
			}
		}
		examples := data.EncodeExamples([]data.Pair{{Src: []string{"ein", "haus", "x"}}}, ck.Model.SrcVocab, ck.Model.TgtVocab)
		for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: 1}, nil) {
			if hyps := ck.Model.Greedy(&b, 4); len(hyps) != 1 || len(hyps[0].Tokens) > 4 {
				t.Fatalf("greedy decoding of one sentence gave %+v", hyps)
			}
		}
	})
}

// FuzzConfigDuplicateKeys reads any bytes as a YAML config file and, when it is a valid config, writes it again
// with one of its key lines (a section's, or a key's with its value on the same line) given twice, one after the
// other: the copy must be refused, naming the key and both lines, where the last one used to win silently.
func FuzzConfigDuplicateKeys(f *testing.F) {
	for _, seed := range []string{Small().YAML(), "model:\n  emb: 64\n  cell: gru\n", "train:\n  lr: 5e-4\n",
		"data: {batch: 8, max_len: 20}\n", "model:\n  emb: 64 # wide\n\ntrain:\n", "'model':\n  \"emb\": 64\n",
		"model:\n    emb: 64\n    dropout: 0.3\ndata:\n    max_len: 20\n"} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(3))
	}
	f.Fuzz(func(t *testing.T, raw []byte, which uint8) {
		if _, _, err := parseConfig(raw); err != nil {
			return // FuzzParseConfig judges the errors
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(raw, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			return
		}
		lines := strings.SplitAfter(string(raw), "\n")
		var keyLines []int // lines (1-based) that hold a whole key: value, or a section's key
		var names []string
		root := doc.Content[0]
		simple := func(k, v *yaml.Node) bool {
			text := strings.TrimSpace(lines[k.Line-1])
			return k.Kind == yaml.ScalarNode && k.Style == 0 && strings.HasPrefix(text, k.Value+":") &&
				(v.Kind != yaml.ScalarNode || v.Line == k.Line && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0)
		}
		for i := 0; i+1 < len(root.Content); i += 2 {
			k, v := root.Content[i], root.Content[i+1]
			if simple(k, v) {
				keyLines, names = append(keyLines, k.Line), append(names, "section "+k.Value)
			}
			if v.Kind != yaml.MappingNode || v.Style&yaml.FlowStyle != 0 {
				continue
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if simple(v.Content[j], v.Content[j+1]) {
					keyLines, names = append(keyLines, v.Content[j].Line), append(names, "key "+k.Value+"."+v.Content[j].Value)
				}
			}
		}
		if len(keyLines) == 0 {
			return
		}
		n := int(which) % len(keyLines)
		line := keyLines[n]
		if !strings.HasSuffix(lines[line-1], "\n") {
			lines[line-1] += "\n" // the last line, without its newline
		}
		twice := strings.Join(slices.Insert(slices.Clone(lines), line, lines[line-1]), "")
		_, _, err := parseConfig([]byte(twice))
		want := fmt.Sprintf("%s is given twice, at lines %d and %d", names[n], line, line+1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("line %d given twice:\n%s\nparseConfig = %v, want %q", line, twice, err, want)
		}
	})
}
