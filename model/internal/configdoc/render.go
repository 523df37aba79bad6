package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/attend-nmt/attend/model"
)

// docs holds the doc comments of the config's Go types and of their fields, as written in the model package.
type docs struct {
	types  map[string]string            // type name → its doc comment
	fields map[string]map[string]string // type name → field name → its doc comment or line comment
}

// readDocs parses the model package's non-test Go files in dir and collects the doc comments of every struct
// type and of its fields.
func readDocs(dir string) (docs, error) {
	d := docs{types: map[string]string{}, fields: map[string]map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return d, err
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return d, fmt.Errorf("read doc comments: %w", err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				d.types[ts.Name.Name] = doc.Text()
				fields := map[string]string{}
				for _, field := range st.Fields.List {
					text := field.Doc.Text()
					if text == "" {
						text = field.Comment.Text()
					}
					for _, name := range field.Names {
						fields[name.Name] = text
					}
				}
				d.fields[ts.Name.Name] = fields
			}
		}
	}
	if len(d.types) == 0 {
		return d, fmt.Errorf("read doc comments: no Go types in %s", dir)
	}
	return d, nil
}

// keyRef matches a config key named in running text, "data.max_len".
var keyRef = regexp.MustCompile(`\b(model|data|train|decode)\.[a-z_]+[a-z]\b`)

// flagRef matches a command-line flag named in running text, "--alpha".
var flagRef = regexp.MustCompile(`(^|[\s(])(--[a-z][a-z-]*)`)

// withRef matches the setting under which a rule holds, as code() leaves it: "(with `model.attention` local)".
var withRef = regexp.MustCompile("\\(with `([a-z_.]+)` ([^)]+)\\)")

// angleToken matches a token written in angle brackets, "<pad>", which Markdown would take for HTML.
var angleToken = regexp.MustCompile(`</?[a-z]+>`)

// prose turns a Go doc comment into a sentence of the reference: one line; the leading Go name dropped (with
// "is", for a definition), the first letter capitalized; config keys, flags and tokens in angle brackets as code;
// a full stop at the end.
func prose(comment, goName string, keys map[string]bool) string {
	s := strings.Join(strings.Fields(comment), " ")
	if rest, ok := strings.CutPrefix(s, goName+" "); ok {
		s = strings.TrimPrefix(rest, "is ")
	}
	s = code(s, keys)
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// code marks the config keys, flags and tokens in angle brackets of s as code.
func code(s string, keys map[string]bool) string {
	s = keyRef.ReplaceAllStringFunc(s, func(k string) string {
		if !keys[k] {
			return k
		}
		return "`" + k + "`"
	})
	s = flagRef.ReplaceAllString(s, "$1`$2`")
	return angleToken.ReplaceAllString(s, "`$0`")
}

// render writes the reference of every config key, from the model package's source in modelDir (for the doc
// comments) and the presets in configsDir. A key without a doc comment is an error naming it.
func render(modelDir, configsDir string) ([]byte, error) {
	d, err := readDocs(modelDir)
	if err != nil {
		return nil, err
	}
	keys := model.Keys()
	known := map[string]bool{}
	for _, k := range keys {
		known[k.Name] = true
	}
	var missing []string
	for _, k := range keys {
		if strings.TrimSpace(d.fields[k.Struct][k.Field]) == "" {
			missing = append(missing, fmt.Sprintf("%s (field %s.%s)", k.Name, k.Struct, k.Field))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("config keys without a description: %s; give each field a doc comment in model/config.go", strings.Join(missing, ", "))
	}

	var b bytes.Buffer
	b.WriteString(header)
	var sections []string
	for _, k := range keys {
		if !slices.Contains(sections, k.Section) {
			sections = append(sections, k.Section)
		}
	}
	fmt.Fprintf(&b, "Sections: %s; then [the presets](#presets).\n", linkList(sections))
	for _, sec := range sections {
		var in []model.Key
		for _, k := range keys {
			if k.Section == sec {
				in = append(in, k)
			}
		}
		fmt.Fprintf(&b, "\n## %s\n\n", sec)
		if doc := d.types[in[0].Struct]; doc != "" {
			doc = strings.Replace(doc, in[0].Struct, "The `"+sec+"` section", 1)
			fmt.Fprintf(&b, "%s\n", prose(doc, "", known))
		}
		allFixed := !slices.ContainsFunc(in, func(k model.Key) bool { return !k.FixedOnResume })
		if allFixed {
			fmt.Fprintf(&b, "\n%s\n", fixedNote)
		}
		b.WriteString("\n| key | type | default | accepts |\n|---|---|---|---|\n")
		for _, k := range in {
			accepts := code(k.Accepts, known)
			if accepts == "" {
				accepts = "any " + k.Type
			}
			accepts = withRef.ReplaceAllString(accepts, "(with `$1: $2`)")
			for _, v := range k.Values { // whole words only: "none" also occurs in "(with data.subword none)"
				accepts = regexp.MustCompile(`(^|, )`+regexp.QuoteMeta(v)+`(,|$| )`).ReplaceAllString(accepts, "$1`"+v+"`$2")
			}
			fmt.Fprintf(&b, "| [`%s`](#%s) | %s | `%s` | %s |\n", k.Name, anchor(k.Name), k.Type, k.Default, accepts)
		}
		for _, k := range in {
			fmt.Fprintf(&b, "\n### %s\n\n%s\n", k.Name, prose(d.fields[k.Struct][k.Field], k.Field, known))
			switch {
			case k.FixedOnResume && !allFixed:
				fmt.Fprintf(&b, "\n%s\n", fixedNote)
			case k.BatchShaping:
				b.WriteString("\nDecides the batches: `--resume` accepts a change only from a checkpoint at an epoch boundary.\n")
			}
		}
	}
	if err := renderPresets(&b, configsDir); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// header opens the reference.
const header = `# Configuration reference

<!-- Generated by "make docs" from model/config.go; edit the doc comments there, not this file. -->

Every setting of a training run is a key of one of the sections below. ` + "`attend train`" + ` starts from the
defaults below, reads the YAML file given with ` + "`--config`" + ` over them (only the keys it names change), then
applies its command line: the flags that set common keys (` + "`attend train --help`" + ` names them) and each
` + "`--set section.key=value`" + `, as many as you like. An unknown key, a key given twice or a value of the wrong type
is an error naming the file and the line; then every value outside its range is reported at once, by key. The
checkpoint keeps the whole configuration. ` + "`--resume`" + ` continues with the checkpoint's configuration (or the
` + "`--config`" + ` file's) and the command line's changes, except where a key below says otherwise.

A file sets only what it names:

` + "```yaml" + `
model:
  cell: gru
train:
  lr: 0.0005
` + "```" + `

`

// fixedNote says that a key cannot change on resume.
const fixedNote = "Fixed by the checkpoint: `--resume` refuses a change."

// anchor is the fragment GitHub gives the heading "### name".
func anchor(name string) string { return strings.ReplaceAll(name, ".", "") }

// linkList is "[`a`](#a), [`b`](#b)".
func linkList(names []string) string {
	links := make([]string, len(names))
	for i, n := range names {
		links[i] = fmt.Sprintf("[`%s`](#%s)", n, anchor(n))
	}
	return strings.Join(links, ", ")
}

// renderPresets lists the YAML files of configsDir with the keys each sets to other values than the defaults.
func renderPresets(b *bytes.Buffer, configsDir string) error {
	files, err := filepath.Glob(filepath.Join(configsDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("presets: no *.yaml in %s", configsDir)
	}
	b.WriteString("\n## Presets\n\n`configs/` holds ready-made configurations for `--config`. Each one sets these keys to other values\nthan the defaults above (a preset without any is the defaults written out):\n\n")
	b.WriteString("| preset | differs from the defaults in |\n|---|---|\n")
	for _, path := range files {
		cfg, _, err := model.LoadConfig(path)
		if err != nil {
			return fmt.Errorf("presets: %w", err)
		}
		var diffs []string
		for _, c := range model.Diff(model.Default(), cfg) {
			diffs = append(diffs, fmt.Sprintf("`%s: %v`", c.Key, c.New))
		}
		if len(diffs) == 0 {
			diffs = []string{"nothing"}
		}
		fmt.Fprintf(b, "| `configs/%s` | %s |\n", filepath.Base(path), strings.Join(diffs, ", "))
	}
	return nil
}

// writeFile writes text to path, or to standard output when path is "-".
func writeFile(path string, text []byte) error {
	if path == "-" {
		_, err := os.Stdout.Write(text)
		return err
	}
	return os.WriteFile(path, text, 0o644)
}
