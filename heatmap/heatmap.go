// Package heatmap draws and exports the attention of one translated sentence: PNG and SVG heat maps, JSON and
// CSV matrices, and an HTML gallery of many sentences.
package heatmap

import (
	"errors"
	"fmt"
	"math"
)

// ErrShape is the cause of a Validate error: the weights do not have one row per output token and one column
// per source token.
var ErrShape = errors.New("attention matrix does not match the tokens")

// Model identifies the model whose attention a Map shows.
type Model struct {
	Checkpoint  string `json:"checkpoint"`            // path of the checkpoint file
	Step        int    `json:"step"`                  // optimizer steps it was trained for
	Description string `json:"description,omitempty"` // sizes, as model.Seq2Seq.Describe gives them
}

// Map is the attention of one sentence. Weights[t][i] is the weight of source token i when output token t was
// produced; the output usually ends with "</s>", whose row shows where the model looked to stop.
type Map struct {
	Source    []string `json:"source"`
	Output    []string `json:"output"`
	Reference []string `json:"reference,omitempty"` // the reference translation, when one was given
	Forced    bool     `json:"forced,omitempty"`    // Output is a given target scored by teacher forcing
	// ModelOutput is the model's own translation when Output is a forced reference.
	ModelOutput []string `json:"model_output,omitempty"`
	// LogProbs[t] is the log-probability the model gave output token t (forced maps only).
	LogProbs []float64   `json:"log_probs,omitempty"`
	Weights  [][]float32 `json:"attention"`
	Model    Model       `json:"model"`
	Line     int         `json:"line,omitempty"` // the sentence's line in its input file, 1-based; 0 if none
}

// Validate reports an error wrapping ErrShape unless Weights has len(Output) rows of len(Source) finite
// weights (and LogProbs, if any, one entry per output token); a Map that validates can be drawn and exported.
func (m *Map) Validate() error {
	if m.LogProbs != nil && len(m.LogProbs) != len(m.Output) {
		return fmt.Errorf("heatmap: %w: %d log-probabilities for %d output tokens", ErrShape, len(m.LogProbs), len(m.Output))
	}
	if len(m.Weights) != len(m.Output) {
		return fmt.Errorf("heatmap: %w: %d rows for %d output tokens", ErrShape, len(m.Weights), len(m.Output))
	}
	for t, row := range m.Weights {
		if len(row) != len(m.Source) {
			return fmt.Errorf("heatmap: %w: row %d has %d weights for %d source tokens", ErrShape, t, len(row), len(m.Source))
		}
		for i, w := range row {
			if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
				return fmt.Errorf("heatmap: %w: weight [%d][%d] is %v", ErrShape, t, i, w)
			}
		}
	}
	return nil
}

// MeanEntropy is the attention entropy −Σ_i w_i ln w_i in nats, averaged over the output rows: 0 when every
// row looks at one source token, ln(len(Source)) when every row spreads evenly. It is 0 for an empty map.
func (m *Map) MeanEntropy() float64 {
	if len(m.Weights) == 0 {
		return 0
	}
	var sum float64
	for _, row := range m.Weights {
		for _, w := range row {
			if w > 0 {
				sum -= float64(w) * math.Log(float64(w))
			}
		}
	}
	return sum / float64(len(m.Weights))
}

// LogProb is the sum of LogProbs: the log-probability of the whole forced output.
func (m *Map) LogProb() float64 {
	var sum float64
	for _, lp := range m.LogProbs {
		sum += lp
	}
	return sum
}
