// Command configdoc writes docs/config.md, the reference of every config key: its type, default and accepted
// values from the model package (model.Keys), its meaning from the doc comment of its field in model/config.go,
// and the keys each preset in configs/ changes. `make docs` runs it from the repository's root; a test of this
// package fails when the committed file differs from what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	modelDir := flag.String("model", "model", "directory of the model package, whose doc comments describe the keys")
	configsDir := flag.String("configs", "configs", "directory of the preset YAML files")
	out := flag.String("o", "-", "file to write (-: standard output)")
	flag.Parse()
	text, err := render(*modelDir, *configsDir)
	if err == nil {
		err = writeFile(*out, text)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}
