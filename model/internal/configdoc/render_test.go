package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attend-nmt/attend/model"
)

// The repository's layout, seen from this package's directory, where go test runs.
const (
	modelDir   = "../.."
	configsDir = "../../../configs"
	reference  = "../../../docs/config.md"
)

// current compares the committed reference with a freshly generated one, naming the first line that differs.
func current(committed, generated []byte) error {
	if bytes.Equal(committed, generated) {
		return nil
	}
	a, b := strings.Split(string(committed), "\n"), strings.Split(string(generated), "\n")
	line := 0
	for line < len(a) && line < len(b) && a[line] == b[line] {
		line++
	}
	at := func(lines []string) string {
		if line < len(lines) {
			return fmt.Sprintf("%q", lines[line])
		}
		return "the end of the file"
	}
	return fmt.Errorf("docs/config.md is out of date: run make docs (line %d is %s, the config now gives %s)", line+1, at(a), at(b))
}

// TestReferenceIsCurrent fails when docs/config.md is not what the config's definitions give today: a key,
// default, range or doc comment changed without `make docs`.
func TestReferenceIsCurrent(t *testing.T) {
	generated, err := render(modelDir, configsDir)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile(reference)
	if err != nil {
		t.Fatalf("%v: run make docs", err)
	}
	if err := current(committed, generated); err != nil {
		t.Fatal(err)
	}
}

// TestCurrentNamesTheStaleLine: a reference one word off, or one line short, is refused with the line and the fix.
func TestCurrentNamesTheStaleLine(t *testing.T) {
	generated := []byte("# Configuration reference\n\nmodel.emb: 128\n")
	for _, c := range []struct{ committed, want string }{
		{"# Configuration reference\n\nmodel.emb: 64\n", `line 3 is "model.emb: 64", the config now gives "model.emb: 128"`},
		{"# Configuration reference\n\n", `line 3 is "", the config now gives "model.emb: 128"`},
	} {
		err := current([]byte(c.committed), generated)
		if err == nil || !strings.Contains(err.Error(), "docs/config.md is out of date: run make docs") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("current(%q): %v, want the fix and %q", c.committed, err, c.want)
		}
	}
	if err := current(generated, generated); err != nil {
		t.Errorf("the same text: %v", err)
	}
}

// TestEveryKeyIsInTheReference walks the Config struct as the YAML loader and --set do, and finds each key they
// accept in the reference: a row in its section's table, and a heading with a description under it.
func TestEveryKeyIsInTheReference(t *testing.T) {
	text, err := render(modelDir, configsDir)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(text)
	top := reflect.TypeOf(model.Config{})
	n := 0
	for i := range top.NumField() {
		sec := top.Field(i)
		for j := range sec.Type.NumField() {
			key := sec.Tag.Get("yaml") + "." + sec.Type.Field(j).Tag.Get("yaml")
			n++
			cfg := model.Default()
			if err := cfg.Set(key + "=1"); err != nil && strings.Contains(err.Error(), "no key") {
				t.Errorf("--set does not know %s: %v", key, err)
			}
			if !strings.Contains(doc, "| [`"+key+"`](#") {
				t.Errorf("%s has no row in the table of section %s", key, sec.Tag.Get("yaml"))
			}
			_, after, ok := strings.Cut(doc, "\n### "+key+"\n\n")
			if !ok {
				t.Errorf("%s has no heading", key)
				continue
			}
			if desc, _, _ := strings.Cut(after, "\n"); len(strings.Fields(desc)) < 2 {
				t.Errorf("%s: description %q", key, desc)
			}
		}
	}
	if n != len(model.Keys()) || n < 40 {
		t.Fatalf("%d keys in the Config struct, %d in model.Keys()", n, len(model.Keys()))
	}
}

// TestKeyWithoutADescriptionIsRefused removes the comment of one field, a line comment and then a doc comment,
// from a copy of the model package's source: the reference is refused, naming the key and where to describe it.
func TestKeyWithoutADescriptionIsRefused(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(modelDir, "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cut, key string }{
		{"// sentences per decoding batch", "decode.batch"},
		{"// Warmup raises the learning rate linearly over this many steps, then decays it with the inverse square\n\t// root of the step (0: a constant rate).\n", "train.warmup"},
	} {
		if !bytes.Contains(src, []byte(c.cut)) {
			t.Fatalf("config.go no longer has %q: update this test", c.cut)
		}
		dir := t.TempDir()
		files, _ := filepath.Glob(filepath.Join(modelDir, "*.go"))
		for _, f := range files {
			text, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(f) == "config.go" {
				text = bytes.Replace(text, []byte(c.cut), nil, 1)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), text, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := render(dir, configsDir)
		if err == nil || !strings.Contains(err.Error(), "without a description: "+c.key+" (field ") || !strings.Contains(err.Error(), "model/config.go") {
			t.Errorf("without the comment of %s: %v, want an error naming it", c.key, err)
		}
	}
}

// TestProse turns Go doc comments into the reference's sentences.
func TestProse(t *testing.T) {
	keys := map[string]bool{"data.batch": true, "model.attn_dim": true}
	for _, c := range []struct{ comment, name, want string }{
		{"Warmup raises the rate\nover  steps\n", "Warmup", "Raises the rate over steps."},
		{"Alpha is the GNMT length penalty; translate --alpha overrides it.\n", "Alpha", "The GNMT length penalty; translate `--alpha` overrides it."},
		{"sentence pairs per batch (with data.batch: the most)", "Batch", "Sentence pairs per batch (with `data.batch`: the most)."},
		{"4 entries <pad> and </s>; not data.batches", "X", "4 entries `<pad>` and `</s>`; not data.batches."},
		{"splits model.attn_dim (2×model.attn_dim)", "Y", "Splits `model.attn_dim` (2×`model.attn_dim`)."},
	} {
		if got := prose(c.comment, c.name, keys); got != c.want {
			t.Errorf("prose(%q) = %q, want %q", c.comment, got, c.want)
		}
	}
}
