package heatmap

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// WriteJSON writes the map as one JSON object: source, output (and reference) tokens, the attention matrix
// (rows are output tokens) and the model's identity. "output" labels every row of "attention", one for one: it
// ends with "</s>" when the matrix has the row of </s>, the step that ended the translation, and has no "</s>"
// when the length limit cut the translation short.
func WriteJSON(w io.Writer, m *Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(m)
}

// WriteCSV writes the matrix as CSV: a header row with an empty corner cell and the source tokens, then one
// row per output token, starting with the token, then its weights.
func WriteCSV(w io.Writer, m *Map) error {
	if err := m.Validate(); err != nil {
		return err
	}
	cw := csv.NewWriter(w)
	record := append([]string{""}, m.Source...)
	if err := cw.Write(record); err != nil {
		return fmt.Errorf("heatmap: write csv: %w", err)
	}
	for t, row := range m.Weights {
		record = record[:0]
		record = append(record, m.Output[t])
		for _, v := range row {
			record = append(record, strconv.FormatFloat(float64(v), 'g', -1, 32))
		}
		if err := cw.Write(record); err != nil {
			return fmt.Errorf("heatmap: write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("heatmap: write csv: %w", err)
	}
	return nil
}
