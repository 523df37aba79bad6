package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// progressOut is how a command shows the progress of long work on standard error: progress bars with an ETA
// when it is a terminal, else one plain line per interval with the work done, its total and an ETA (a log
// file reads well), or nothing at all with --quiet.
type progressOut struct {
	w     io.Writer
	bars  bool          // w is a terminal: draw bars
	every time.Duration // plain lines: at most one per this interval
	quiet bool          // show nothing
}

// progressFlags adds --quiet and --progress-every to every command.
func progressFlags(root *cobra.Command) {
	fl := root.PersistentFlags()
	fl.BoolP("quiet", "q", false, "no progress on standard error (bars on a terminal, plain progress lines elsewhere)")
	fl.Duration("progress-every", 10*time.Second, "when standard error is not a terminal: a plain progress line at most this often")
}

// progressOf is the progress display of cmd: on its standard error, as --quiet and --progress-every say.
func progressOf(cmd *cobra.Command) progressOut {
	w := cmd.ErrOrStderr()
	quiet, _ := cmd.Flags().GetBool("quiet")
	every, err := cmd.Flags().GetDuration("progress-every")
	if err != nil {
		every = 10 * time.Second
	}
	return progressOut{w: w, bars: isTerminal(w), every: every, quiet: quiet}
}

// isTerminal tells whether w is a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// quietened is p showing nothing.
func (p progressOut) quietened() progressOut {
	p.quiet = true
	return p
}

// noBars is p with plain lines in place of bars (a command whose other output shares the terminal).
func (p progressOut) noBars() progressOut {
	p.bars = false
	return p
}

// start begins showing a piece of work of total units (0: not known), counted in unit ("sentence";
// "": bytes): a bar with its ETA on a terminal, a spinner when the total is not known; a plain line at most every
// p.every elsewhere, and a last one at the end when the work lasted that long, so that work shorter than p.every
// writes none. The meter is safe for use from several goroutines.
func (p progressOut) start(name string, total int64, unit string) *meter {
	m := &meter{out: p, name: name, unit: unit, total: max(total, 0), began: time.Now()}
	m.last = m.began
	switch {
	case p.quiet:
	case p.bars:
		opts := []progressbar.Option{progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(name),
			progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(200 * time.Millisecond),
			progressbar.OptionSetPredictTime(total > 0), progressbar.OptionShowCount()}
		if unit == "" {
			opts = append(opts, progressbar.OptionShowBytes(true))
		}
		if total <= 0 {
			// The spinner is turned by a ticker, under the bar's lock: progressbar's own spinner goroutine reads
			// the bar's state without it.
			opts = append(opts, progressbar.OptionSpinnerType(14), progressbar.OptionSetSpinnerChangeInterval(0))
			total = -1
		}
		m.bar = progressbar.NewOptions64(total, opts...)
		if total < 0 {
			_ = m.bar.RenderBlank() // draw the spinner now; it turns as long as the work lasts
			m.stop = ticker(200*time.Millisecond, func() { _ = m.bar.RenderBlank() })
		}
	case p.every > 0 && total <= 0:
		// Nothing may report progress (a phase of unknown length): say every interval that the work goes on.
		m.stop = ticker(p.every, func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.writeLine(false)
		})
	}
	return m
}

// StartPhase is start: a progressOut is an app.PhaseRecorder.
func (p progressOut) StartPhase(name string, total int64, unit string) app.Phase {
	return p.start(name, total, unit)
}

// meter shows one piece of work under way (see progressOut.start). It is an app.Phase.
type meter struct {
	out        progressOut
	name, unit string
	bar        *progressbar.ProgressBar // on a terminal
	stop       func()                   // stops the spinner or the ticker of plain lines, if any

	mu          sync.Mutex
	total, done int64
	began, last time.Time // the start, and the last plain line
	lines       int       // plain lines written
	ended       bool
}

// Add counts n more units done.
func (m *meter) Add(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(m.done + n)
}

// Set says that done units are done.
func (m *meter) Set(done int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setLocked(done)
}

func (m *meter) setLocked(done int64) {
	if m.ended {
		return
	}
	m.done = done
	switch {
	case m.out.quiet:
	case m.bar != nil:
		if m.total > 0 {
			_ = m.bar.Set64(done) // the bar clears itself at its total
		}
	case m.total > 0 && done >= m.total:
		if m.due() {
			m.writeLine(true) // the work is done: its last line comes now, before whatever the command prints next
		}
		m.ended = true
	case m.out.every > 0 && time.Since(m.last) >= m.out.every:
		m.writeLine(false)
	}
}

// SetTotal changes the total.
func (m *meter) SetTotal(total int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total = total
	if m.bar != nil && total > 0 {
		m.bar.ChangeMax64(total)
	}
}

// Describe changes the name of the work.
func (m *meter) Describe(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.name = name
	if m.bar != nil {
		m.bar.Describe(name)
	}
}

// Clear takes the bar off the terminal, for a line of other output; the next progress draws it again.
func (m *meter) Clear() {
	if m.bar != nil {
		_ = m.bar.Clear()
	}
}

// End ends the work: the bar is cleared, and a last plain line says how long it took when the work lasted an
// interval (see due).
func (m *meter) End() {
	if m.stop != nil {
		m.stop()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended {
		return
	}
	m.ended = true
	switch {
	case m.out.quiet:
	case m.bar != nil:
		_ = m.bar.Finish()
	case m.due():
		m.writeLine(true)
	}
}

// due tells whether the last plain line is due: when there were others, or the work lasted an interval.
func (m *meter) due() bool {
	return m.lines > 0 || m.out.every > 0 && time.Since(m.began) >= m.out.every
}

// writeLine writes a plain progress line: "translating test.de: 400/1000 sentences (40%), 33 sentences/s,
// elapsed 12s, ETA 18s"; the last one says "took 30s" instead of the elapsed time and ETA.
func (m *meter) writeLine(final bool) {
	elapsed := time.Since(m.began)
	m.last = time.Now()
	m.lines++
	var b strings.Builder
	b.WriteString(m.name + ":")
	switch {
	case m.unit == "" && m.total > 0:
		fmt.Fprintf(&b, " %s/%s MB (%.0f%%),", megabytes(m.done), megabytes(m.total), 100*float64(m.done)/float64(m.total))
	case m.total > 0:
		fmt.Fprintf(&b, " %d/%s (%.0f%%),", m.done, plural.Count(int(m.total), m.unit), 100*float64(m.done)/float64(m.total))
	case m.done > 0 && m.unit == "":
		fmt.Fprintf(&b, " %s MB,", megabytes(m.done))
	case m.done > 0:
		fmt.Fprintf(&b, " %s,", plural.Count(int(m.done), m.unit))
	}
	if secs := elapsed.Seconds(); m.done > 0 && secs > 0 {
		if m.unit == "" {
			fmt.Fprintf(&b, " %.1f MB/s,", float64(m.done)/1e6/secs)
		} else {
			fmt.Fprintf(&b, " %.1f %s/s,", float64(m.done)/secs, plural.Noun(2, m.unit))
		}
	}
	if final {
		fmt.Fprintf(&b, " took %s\n", roundDuration(elapsed))
	} else {
		fmt.Fprintf(&b, " elapsed %s", roundDuration(elapsed))
		if m.total > 0 && m.done > 0 {
			fmt.Fprintf(&b, ", ETA %s", roundDuration(eta(elapsed, m.done, m.total)))
		}
		b.WriteString("\n")
	}
	_, _ = io.WriteString(m.out.w, b.String())
}

// eta is the time left when done of total units took elapsed, at the same pace.
func eta(elapsed time.Duration, done, total int64) time.Duration {
	if done <= 0 || total <= done {
		return 0
	}
	return time.Duration(float64(elapsed) / float64(done) * float64(total-done))
}

// roundDuration rounds d to the second ("1m5s"), or to the tenth of a second under ten seconds ("2.3s").
func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// megabytes writes a count of bytes in MB with one decimal.
func megabytes(n int64) string { return fmt.Sprintf("%.1f", float64(n)/1e6) }

// ticker calls f every interval until the function it returns is called, which waits for a call under way.
func ticker(interval time.Duration, f func()) func() {
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			<-exited
		})
	}
}

// newRecorder picks how a training run shows its progress: one progress bar for the whole run on standard
// error when it is a terminal and the user asked for neither --no-progress nor --quiet, else one plain line
// every train.log_every steps on log (as OpenNMT-py and Marian log), with the step and the run's last step, and
// the ETA, which reads well in a redirected log file.
func newRecorder(log io.Writer, progress progressOut, noProgress bool) model.Recorder {
	if progress.bars && !noProgress && !progress.quiet {
		return &barRecorder{progressOut: progress, log: log}
	}
	return &lineRecorder{log: log, progressOut: progress.noBars()}
}

// lineRecorder writes plain log lines. The phases before training write a plain progress line per interval
// on standard error when they last that long (app prints a line at the end of each).
type lineRecorder struct {
	progressOut // StartPhase
	log         io.Writer
	began       time.Time // the first epoch's start in this run
	from        int       // the step this run started from
	steps       int       // the step the run ends at
}

func (r *lineRecorder) EpochStart(e model.EpochStart) {
	if r.began.IsZero() {
		r.began, r.from = time.Now(), e.Step
	}
	r.steps = e.Steps
	resuming := ""
	if e.Done > 0 {
		resuming = fmt.Sprintf(", resuming after batch %d", e.Done)
	}
	fmt.Fprintf(r.log, "epoch %d/%d: %s%s; the run ends at step %d\n", e.Epoch, e.Epochs, plural.Count(e.Batches, "batch", "batches"), resuming, e.Steps)
}

func (r *lineRecorder) BatchDone() {}

func (r *lineRecorder) Logged(s model.StepLog) {
	line := stepLine(s, r.steps)
	if done := int64(s.Step - r.from); done > 0 && s.Step < r.steps {
		line += "  ETA " + roundDuration(eta(time.Since(r.began), done, int64(r.steps-r.from)))
	}
	fmt.Fprintln(r.log, line)
}

func (r *lineRecorder) Validated(v model.ValidLog) { fmt.Fprintln(r.log, validLine(v)) }

func (r *lineRecorder) EpochEnd() {}

// barRecorder draws one progress bar for the whole run on a terminal, from the first step to the run's last;
// validations get a plain line on log, and each phase before training a bar of its own (StartPhase: with its
// count when its total is known, else a spinner).
type barRecorder struct {
	progressOut
	log   io.Writer
	bar   *meter
	epoch string // "epoch 2/10"
}

func (r *barRecorder) EpochStart(e model.EpochStart) {
	r.epoch = fmt.Sprintf("epoch %d/%d", e.Epoch, e.Epochs)
	if r.bar == nil || r.bar.bar.IsFinished() {
		r.bar = r.start(r.epoch, int64(e.Steps), "step")
		r.bar.Set(int64(e.Step))
		return
	}
	r.bar.SetTotal(int64(e.Steps))
	r.bar.Describe(r.epoch)
	r.bar.Set(int64(e.Step))
}

func (r *barRecorder) BatchDone() { r.bar.Add(1) }

func (r *barRecorder) Logged(s model.StepLog) {
	guided := ""
	if s.Guiding {
		guided = fmt.Sprintf(" align %.3f", s.Guided)
	}
	r.bar.Describe(fmt.Sprintf("%s loss %.3f%s %.0f tok/s", r.epoch, s.Loss, guided, s.TokPerS))
}

func (r *barRecorder) Validated(v model.ValidLog) {
	if r.bar != nil {
		r.bar.Clear()
	}
	fmt.Fprintln(r.log, validLine(v))
}

// EpochEnd takes the bar off the terminal: a validation, a checkpoint's line or the run's summary follows. The
// next step draws it again; at the run's last step it has cleared itself.
func (r *barRecorder) EpochEnd() {
	if r.bar != nil {
		r.bar.Clear()
	}
}

// stepLine is the plain log line of a logging window of a run that ends at step steps.
func stepLine(s model.StepLog, steps int) string {
	guided := ""
	if s.Guiding {
		guided = fmt.Sprintf("  guided-alignment loss %.4f", s.Guided)
	}
	line := fmt.Sprintf("step %d of %d  epoch %d  loss %.4f%s  %.0f tok/s  elapsed %s", s.Step, steps, s.Epoch, s.Loss, guided, s.TokPerS,
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
	if !math.IsNaN(v.AER) {
		line += fmt.Sprintf("  AER %.3f", v.AER)
	}
	if v.Best {
		line += "  (best so far: saved)"
	}
	return line
}

// epochsDone says where a validation stands: "1 epoch done" at an epoch's end, "in epoch 2" within it.
func epochsDone(v model.ValidLog) string {
	if v.EpochsDone < v.Epoch {
		return fmt.Sprintf("in epoch %d", v.Epoch)
	}
	return plural.Count(v.EpochsDone, "epoch") + " done"
}

// streamsOf is where cmd reads and writes, with its progress display.
func streamsOf(cmd *cobra.Command) app.Streams {
	return app.Streams{Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Progress: progressOf(cmd)}
}
