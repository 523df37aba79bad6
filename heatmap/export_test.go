package heatmap

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"testing"
)

func TestJSONRoundTrips(t *testing.T) {
	m := testMap()
	m.Reference = []string{"a", "girl", "rides"}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, m); err != nil {
		t.Fatal(err)
	}
	var back Map
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, m) {
		t.Errorf("read back %+v, wrote %+v", back, *m)
	}
	var raw map[string]any
	json.Unmarshal(buf.Bytes(), &raw)
	for _, key := range []string{"source", "output", "attention", "model"} {
		if raw[key] == nil {
			t.Errorf("JSON lacks %q", key)
		}
	}
}

func TestCSVHasTokensAndWeights(t *testing.T) {
	m := testMap()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, m); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != len(m.Output)+1 || !reflect.DeepEqual(records[0][1:], m.Source) {
		t.Fatalf("header %v, %d records", records[0], len(records))
	}
	for r, rec := range records[1:] {
		if rec[0] != m.Output[r] {
			t.Errorf("row %d is %q, want %q", r, rec[0], m.Output[r])
		}
		for i, field := range rec[1:] {
			v, err := strconv.ParseFloat(field, 32)
			if err != nil || float32(v) != m.Weights[r][i] {
				t.Errorf("cell (%d,%d) = %q, want %v", r, i, field, m.Weights[r][i])
			}
		}
	}
}

func TestMeanEntropy(t *testing.T) {
	m := &Map{Source: []string{"a", "b"}, Output: []string{"x", "y"}, Weights: [][]float32{{1, 0}, {0.5, 0.5}}}
	// Row 1 is certain (0 nats), row 2 uniform over two (ln 2): mean ln(2)/2.
	if got, want := m.MeanEntropy(), math.Ln2/2; math.Abs(got-want) > 1e-7 {
		t.Errorf("MeanEntropy = %v, want %v", got, want)
	}
	if got := (&Map{}).MeanEntropy(); got != 0 {
		t.Errorf("empty map: %v", got)
	}
}
