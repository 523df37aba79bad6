package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode"
)

// checkKeys refuses (400) a JSON body that gives a key twice in one object, at any depth, where a decoder
// would keep the last silently. Keys are compared as encoding/json matches them to fields, regardless of case
// (foldKey): "text" and "TEXT" are the same field. body must be valid JSON (decoded already).
func checkKeys(body []byte) *apiError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	type frame struct {
		object, wantKey bool
		keys            map[string]string // folded key → the key as written first
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or an error the decoder has reported already
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{object: true, wantKey: true, keys: map[string]string{}})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].wantKey = true
			}
			continue
		}
		if top == nil || !top.object {
			continue
		}
		if !top.wantKey {
			top.wantKey = true // a value
			continue
		}
		key, _ := tok.(string)
		folded := foldKey(key)
		if first, ok := top.keys[folded]; ok {
			same := ""
			if first != key {
				same = fmt.Sprintf(" (as %q: keys are matched regardless of case)", first)
			}
			return errorf(http.StatusBadRequest, "the key %q is given twice in one object of the request%s; give each key once", key, same)
		}
		top.keys[folded] = key
		top.wantKey = false
	}
}

// foldKey is a key with each letter replaced by the smallest of its case-folding orbit (unicode.SimpleFold),
// so that two keys fold equal exactly when bytes.EqualFold, by which encoding/json matches fields, says they
// are equal (K, k and the Kelvin sign among them).
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, key)
}
