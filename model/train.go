package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/attend-nmt/attend/data"
	"github.com/schollz/progressbar/v3"
)

// ErrInterrupted is returned by Train when its context is cancelled; the checkpoint at the output path holds
// the exact position, and training resumes from it.
var ErrInterrupted = errors.New("training interrupted; progress saved, continue with --resume")

// TrainOptions is one training run. Train and Valid are encoded with the model's vocabularies.
type TrainOptions struct {
	Config       Config
	Train, Valid []data.Example
	// Start is the model to train: a fresh one, or a loaded checkpoint's (then Progress and Adam come with it).
	Model    *Seq2Seq[float32]
	Adam     *Adam[float32] // nil: a fresh optimizer
	Progress Progress
	Out      string    // checkpoint path of the last state; the best goes to BestPath(Out)
	Metrics  io.Writer // JSON lines, one per logged step and per validation (nil: none)
	Bar      io.Writer // progress bar (nil: none)
}

// Summary is the outcome of a training run.
type Summary struct {
	Steps, Epochs       int
	TokensPerSecond     float64
	TrainLoss           float64 // token-averaged over the last logging window
	ValidLoss, ValidPPL float64 // NaN without validation data
}

// String is the last line a training run prints.
func (s Summary) String() string {
	return fmt.Sprintf("done: %d steps, %d epochs, %.0f tgt tok/s, train loss %.4f, valid loss %.4f, valid ppl %.3f",
		s.Steps, s.Epochs, s.TokensPerSecond, s.TrainLoss, s.ValidLoss, s.ValidPPL)
}

// dropoutStream is the PCG stream of the dropout masks; the epoch shuffles use stream epoch+1, init stream 0.
const dropoutStream = 1 << 40

// Train runs the training loop: epochs of shuffled, bucketed batches; a checkpoint every SaveEvery steps, at each
// epoch end and on interruption; validation after each epoch, keeping the best checkpoint. Batches depend only
// on (seed, epoch) and dropout masks on (seed, step), so a resumed run reproduces an uninterrupted one.
func Train(ctx context.Context, o TrainOptions) (Summary, error) {
	cfg := o.Config
	tr := NewTrainer(o.Model, cfg.Train.LR, cfg.Train.Clip, cfg.Train.GraphCache)
	tr.Unfused = cfg.Train.Unfused
	if o.Adam != nil {
		tr.Optimizer = o.Adam
	}
	prog := o.Progress
	sum := Summary{ValidLoss: math.NaN(), ValidPPL: math.NaN()}
	save := func(path string) error { return Save(path, cfg, o.Model, tr.Optimizer, prog) }
	log := func(rec map[string]any) {
		if o.Metrics != nil {
			line, _ := json.Marshal(rec)
			fmt.Fprintf(o.Metrics, "%s\n", line)
		}
	}
	opts := data.BatchOptions{BatchSize: cfg.Data.Batch, ChunkBatches: cfg.Data.BucketChunk, RoundLen: cfg.Data.RoundLen, Shuffle: true}
	var runTokens int
	var runSeconds float64
	done := func() bool { return cfg.Train.MaxSteps > 0 && prog.Step >= cfg.Train.MaxSteps }

	for prog.Epoch < cfg.Train.Epochs && !done() {
		batches := data.MakeBatches(o.Train, opts, rand.New(rand.NewPCG(cfg.Train.Seed, uint64(prog.Epoch)+1)))
		var bar *progressbar.ProgressBar
		if o.Bar != nil {
			bar = progressbar.NewOptions(len(batches), progressbar.OptionSetWriter(o.Bar),
				progressbar.OptionSetDescription(fmt.Sprintf("epoch %d", prog.Epoch+1)),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
				progressbar.OptionThrottle(200*time.Millisecond))
			_ = bar.Set(prog.Batch)
		}
		var winLoss float64
		var winTokens int
		winStart := time.Now()
		for prog.Batch < len(batches) && !done() {
			if ctx.Err() != nil {
				if err := save(o.Out); err != nil {
					return sum, err
				}
				return sum, ErrInterrupted
			}
			start := time.Now()
			res, err := tr.Step(&batches[prog.Batch], rand.New(rand.NewPCG(cfg.Train.Seed+dropoutStream, uint64(prog.Step))))
			if err != nil {
				return sum, fmt.Errorf("epoch %d batch %d: %w", prog.Epoch+1, prog.Batch, err)
			}
			if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
				return sum, fmt.Errorf("epoch %d batch %d: loss is %v; lower train.lr or check the data", prog.Epoch+1, prog.Batch, res.Loss)
			}
			elapsed := time.Since(start).Seconds()
			prog.ElapsedS += elapsed
			runSeconds += elapsed
			runTokens += res.Tokens
			prog.Step++
			prog.Batch++
			winLoss += res.Loss * float64(res.Tokens)
			winTokens += res.Tokens
			if prog.Step%max(cfg.Train.LogEvery, 1) == 0 || prog.Batch == len(batches) || done() {
				tokPerS := float64(winTokens) / time.Since(winStart).Seconds()
				sum.TrainLoss = winLoss / float64(max(winTokens, 1))
				log(map[string]any{"event": "step", "step": prog.Step, "epoch": prog.Epoch + 1, "loss": sum.TrainLoss,
					"tgt_tokens": winTokens, "tok_per_s": tokPerS, "grad_norm": res.GradNorm, "elapsed_s": prog.ElapsedS})
				if bar != nil {
					bar.Describe(fmt.Sprintf("epoch %d loss %.3f %.0f tok/s", prog.Epoch+1, sum.TrainLoss, tokPerS))
				}
				winLoss, winTokens, winStart = 0, 0, time.Now()
			}
			if bar != nil {
				_ = bar.Add(1)
			}
			if cfg.Train.SaveEvery > 0 && prog.Step%cfg.Train.SaveEvery == 0 {
				if err := save(o.Out); err != nil {
					return sum, err
				}
			}
		}
		if bar != nil {
			_ = bar.Finish()
		}
		if prog.Batch >= len(batches) {
			prog.Epoch++
			prog.Batch = 0
			sum.Epochs++
		}
		if len(o.Valid) > 0 {
			vl := ValidLoss(o.Model, o.Valid, cfg.Data.Batch)
			sum.ValidLoss, sum.ValidPPL = vl, math.Exp(vl)
			log(map[string]any{"event": "valid", "step": prog.Step, "epoch": prog.Epoch, "valid_loss": vl,
				"valid_ppl": math.Exp(vl), "elapsed_s": prog.ElapsedS})
			if prog.BestValidLoss == nil || vl < *prog.BestValidLoss {
				prog.BestValidLoss = &vl
				if err := save(BestPath(o.Out)); err != nil {
					return sum, err
				}
			}
		}
		if err := save(o.Out); err != nil {
			return sum, err
		}
	}
	sum.Steps = prog.Step
	if runSeconds > 0 {
		sum.TokensPerSecond = float64(runTokens) / runSeconds
	}
	return sum, nil
}

// ValidLoss is the token-averaged cross-entropy of examples under teacher forcing, without dropout.
func ValidLoss(m *Seq2Seq[float32], examples []data.Example, batchSize int) float64 {
	var total float64
	var tokens int
	for _, b := range data.MakeBatches(examples, data.BatchOptions{BatchSize: batchSize}, nil) {
		s, n := m.Loss(&b)
		total += s
		tokens += n
	}
	return total / float64(max(tokens, 1))
}
