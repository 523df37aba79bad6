package model

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/data"
)

// TestSubwordMergesSurviveSaveAndLoad saves models with learned merges (some of them none at all) and checks
// that loading gives the same merges in the same order, that saving again gives the same bytes, and that a
// model and a config that disagree about subwords are refused.
func TestSubwordMergesSurviveSaveAndLoad(t *testing.T) {
	words := [][]string{strings.Fields("über übers überall lower lowest newer newest wider widest"),
		strings.Fields("lower lowest newest über")}
	for _, tc := range []struct {
		name   string
		merges *data.BPE
	}{
		{"learned", data.LearnBPE(words, 30)},
		{"none learned", data.LearnBPE([][]string{{"ab"}}, 30)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tinyConfig()
			cfg.Data.Subword, cfg.Data.Merges = SubwordBPE, 30
			m, _ := tinySetup(t, cfg, tinyCorpus(8, 1))
			m.Subwords = tc.merges
			dir := t.TempDir()
			path := filepath.Join(dir, "m.ckpt")
			if err := Save(path, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
				t.Fatal(err)
			}
			ck, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if ck.Model.Subwords == nil || !slices.Equal(ck.Model.Subwords.Merges, tc.merges.Merges) ||
				len(ck.Model.Subwords.Merges) != len(tc.merges.Merges) {
				t.Fatalf("merges %v after loading, want %q", ck.Model.Subwords, tc.merges.Merges)
			}
			again := filepath.Join(dir, "again.ckpt")
			if err := Save(again, ck.Config, ck.Model, ck.Adam, ck.Progress); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(readFile(t, path), readFile(t, again)) {
				t.Fatal("re-saved checkpoint differs from the original")
			}
			m.Subwords = nil
			if err := Save(filepath.Join(dir, "bad.ckpt"), cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err == nil ||
				!strings.Contains(err.Error(), "data.subword is bpe but the model has no subword merges") {
				t.Fatalf("saving a model without merges under data.subword bpe: %v", err)
			}
		})
	}
}

// TestLoadChecksStoredMerges edits the header of a subword checkpoint and of one written before subwords
// existed: the old one loads as a model of words, and merges that contradict the config are refused.
func TestLoadChecksStoredMerges(t *testing.T) {
	cfg := tinyConfig()
	cfg.Data.Subword, cfg.Data.Merges = SubwordBPE, 2
	m, _ := tinySetup(t, cfg, tinyCorpus(8, 1))
	m.Subwords = &data.BPE{Merges: [][2]string{{"a", "b"}, {"ab", "c</w>"}}}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.ckpt")
	if err := Save(good, cfg, m, NewAdam(m.Params, cfg.Train.LR), Progress{}); err != nil {
		t.Fatal(err)
	}
	dataSection := func(h map[string]any) map[string]any { return h["config"].(map[string]any)["Data"].(map[string]any) }
	cases := []struct {
		name string
		edit func(h map[string]any)
		want string // "": loads, as a model of words
	}{
		{"written before subwords", func(h map[string]any) {
			delete(h, "bpe_merges")
			delete(dataSection(h), "Subword")
			delete(dataSection(h), "Merges")
		}, ""},
		{"merges missing", func(h map[string]any) { delete(h, "bpe_merges") }, "data.subword is bpe but the checkpoint holds no bpe_merges"},
		{"more merges than asked", func(h map[string]any) { dataSection(h)["Merges"] = 1 }, "bpe_merges holds 2 merges, more than data.merges 1"},
		{"empty symbol", func(h map[string]any) { h["bpe_merges"] = []any{[]any{"a", ""}} }, "bpe_merges[0]"},
		{"symbol with a space", func(h map[string]any) { h["bpe_merges"] = []any{[]any{"a b", "c"}} }, "without white space"},
		{"merges of a model of words", func(h map[string]any) { dataSection(h)["Subword"] = "none"; dataSection(h)["Merges"] = 0 }, "bpe_merges holds 2 merges but data.subword is none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeEditedHeader(t, good, filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ckpt"), c.edit)
			ck, err := Load(path)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ck.Model.Subwords != nil {
					t.Fatalf("an old checkpoint loaded with merges %q", ck.Model.Subwords.Merges)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("Load = %v, want an error naming the file and %q", err, c.want)
			}
		})
	}
}
