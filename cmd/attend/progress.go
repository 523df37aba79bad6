package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/attend-nmt/attend/wordalign"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// newRecorder picks how a training run shows its progress: a progress bar on stderr when stderr is a terminal
// and the user did not ask for --no-progress, else one plain line every train.log_every steps on log (as
// OpenNMT-py and Marian log), which reads well in a redirected log file.
func newRecorder(log io.Writer, noProgress bool) model.Recorder {
	if !noProgress && term.IsTerminal(int(os.Stderr.Fd())) {
		return &barRecorder{bar: os.Stderr, log: log}
	}
	return lineRecorder{log: log}
}

// lineRecorder writes plain log lines. It shows no progress within the phases before training (app prints
// one line at the end of each).
type lineRecorder struct{ log io.Writer }

func (lineRecorder) StartPhase(string, int64) app.Phase { return quietPhase{} }

type quietPhase struct{}

func (quietPhase) Set(int64) {}
func (quietPhase) End()      {}

func (r lineRecorder) EpochStart(epoch, batches, done int) {
	if done > 0 {
		fmt.Fprintf(r.log, "epoch %d: %s, resuming after batch %d\n", epoch, plural.Count(batches, "batch", "batches"), done)
		return
	}
	fmt.Fprintf(r.log, "epoch %d: %s\n", epoch, plural.Count(batches, "batch", "batches"))
}

func (r lineRecorder) BatchDone() {}

func (r lineRecorder) Logged(s model.StepLog) { fmt.Fprintln(r.log, stepLine(s)) }

func (r lineRecorder) Validated(v model.ValidLog) { fmt.Fprintln(r.log, validLine(v)) }

func (r lineRecorder) EpochEnd() {}

// barRecorder draws a progress bar per epoch on a terminal; validations still get a plain line.
type barRecorder struct {
	bar, log io.Writer
	current  *progressbar.ProgressBar
}

func (r *barRecorder) EpochStart(epoch, batches, done int) {
	r.current = progressbar.NewOptions(batches, progressbar.OptionSetWriter(r.bar),
		progressbar.OptionSetDescription(fmt.Sprintf("epoch %d", epoch)),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(200*time.Millisecond))
	_ = r.current.Set(done)
}

func (r *barRecorder) BatchDone() { _ = r.current.Add(1) }

// StartPhase draws a bar for a phase before training: of bytes when its total is known, else a spinner.
func (r *barRecorder) StartPhase(name string, total int64) app.Phase {
	opts := []progressbar.Option{progressbar.OptionSetWriter(r.bar), progressbar.OptionSetDescription(name),
		progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(200 * time.Millisecond), progressbar.OptionSetPredictTime(total > 0)}
	if total > 0 {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionShowCount())
	} else {
		total = -1
		// The spinner is turned by startSpinner, under the bar's lock: progressbar's own spinner goroutine reads
		// the bar's state without it.
		opts = append(opts, progressbar.OptionSpinnerType(14), progressbar.OptionSetSpinnerChangeInterval(0))
	}
	bar := progressbar.NewOptions64(total, opts...)
	if total < 0 {
		_ = bar.RenderBlank() // draw the spinner now; it turns as long as the phase lasts
		return spinnerPhase{bar: bar, stop: startSpinner(bar)}
	}
	return barPhase{bar}
}

// barPhase is a phase of known size: Set moves the bar.
type barPhase struct{ bar *progressbar.ProgressBar }

func (p barPhase) Set(done int64) { _ = p.bar.Set64(done) }
func (p barPhase) End()           { _ = p.bar.Finish() }

// spinnerPhase is a phase of unknown size: a spinner turned by a goroutine until End.
type spinnerPhase struct {
	bar  *progressbar.ProgressBar
	stop func()
}

func (p spinnerPhase) Set(int64) {}
func (p spinnerPhase) End() {
	p.stop()
	_ = p.bar.Finish()
}

// startSpinner redraws bar every 200 ms until the function it returns is called, which waits for the last
// redraw.
func startSpinner(bar *progressbar.ProgressBar) func() {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				_ = bar.RenderBlank()
			}
		}
	}()
	return func() {
		close(done)
		<-exited
	}
}

func (r *barRecorder) Logged(s model.StepLog) {
	guided := ""
	if s.Guiding {
		guided = fmt.Sprintf(" align %.3f", s.Guided)
	}
	r.current.Describe(fmt.Sprintf("epoch %d loss %.3f%s %.0f tok/s", s.Epoch, s.Loss, guided, s.TokPerS))
}

func (r *barRecorder) Validated(v model.ValidLog) { fmt.Fprintln(r.log, validLine(v)) }

func (r *barRecorder) EpochEnd() { _ = r.current.Finish() }

// stepLine is the plain log line of a logging window.
func stepLine(s model.StepLog) string {
	guided := ""
	if s.Guiding {
		guided = fmt.Sprintf("  guided-alignment loss %.4f", s.Guided)
	}
	line := fmt.Sprintf("step %d  epoch %d  loss %.4f%s  %.0f tok/s  elapsed %s", s.Step, s.Epoch, s.Loss, guided, s.TokPerS,
		time.Duration(s.ElapsedS*float64(time.Second)).Round(time.Second))
	if s.BadSteps > 0 {
		line += fmt.Sprintf("  skipped %d (non-finite loss or gradient)", s.BadSteps)
	}
	return line
}

// validLine is the plain log line of a validation.
func validLine(v model.ValidLog) string {
	line := fmt.Sprintf("validation at step %d (%s): loss %.4f  ppl %.3f", v.Step, epochsDone(v), v.Loss, v.PPL)
	if !math.IsNaN(v.BLEU) {
		line += fmt.Sprintf("  BLEU %.2f", v.BLEU)
	}
	if v.Best {
		line += "  (best so far: saved)"
	}
	return line
}

// alignProgress shows the statistical aligner's passes over the corpus: a progress bar per pass on standard
// error when it is a terminal (unless noProgress), and one plain line per EM iteration in any case, as
// fast_align prints its iterations.
type alignProgress struct {
	log     io.Writer
	bars    bool
	current *progressbar.ProgressBar
	pass    wordalign.Progress // the pass the bar shows
}

func newAlignProgress(log io.Writer, noProgress bool) *alignProgress {
	return &alignProgress{log: log, bars: !noProgress && term.IsTerminal(int(os.Stderr.Fd()))}
}

// report is a wordalign.Options.Progress.
func (a *alignProgress) report(p wordalign.Progress) {
	if a.bars {
		if a.current == nil || p.Direction != a.pass.Direction || p.Iteration != a.pass.Iteration {
			a.close()
			a.current = progressbar.NewOptions(p.Total, progressbar.OptionSetWriter(os.Stderr),
				progressbar.OptionSetDescription(passName(p)), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true), progressbar.OptionClearOnFinish(),
				progressbar.OptionThrottle(200*time.Millisecond))
			a.pass = p
		}
		_ = a.current.Set(p.Done)
		if p.Done == p.Total {
			a.close()
		}
	}
	if s := p.Stats; s != nil {
		fmt.Fprintf(a.log, "%s: log-likelihood per word %.4f, empty word %.1f%%, tension %.3f\n", passName(p),
			s.LogLikelihood, 100*s.NullShare, s.Tension)
	}
}

// close ends the current bar, if any.
func (a *alignProgress) close() {
	if a.current != nil {
		_ = a.current.Finish()
		a.current = nil
	}
}

// passName names a pass of the statistical aligner: "forward EM 2/4", "reverse aligning".
func passName(p wordalign.Progress) string {
	name := p.Direction
	if name != "" {
		name += " "
	}
	if p.Iteration == 0 {
		return name + "aligning"
	}
	return fmt.Sprintf("%sEM %d/%d", name, p.Iteration, p.Iterations)
}

// epochsDone says where a validation stands: "1 epoch done" at an epoch's end, "in epoch 2" within it.
func epochsDone(v model.ValidLog) string {
	if v.EpochsDone < v.Epoch {
		return fmt.Sprintf("in epoch %d", v.Epoch)
	}
	return plural.Count(v.EpochsDone, "epoch") + " done"
}
