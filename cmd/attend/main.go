// Command attend trains attention sequence-to-sequence translation models on the CPU, translates with them and
// shows where they looked. Run `attend --help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"unicode"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/backend"
	"github.com/spf13/cobra"
)

func main() {
	backend.Select(os.Stderr) // attend version and the training header say what it chose
	os.Exit(attendMain(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// attendMain runs one attend command line and returns the process's exit status: 0 on success, 1 on an error, and
// 128 + the signal's number (130 for SIGINT, 143 for SIGTERM) when a signal stopped the command. Until the
// command says that its work has started (app.Started), the first SIGINT or SIGTERM exits at once. Afterwards
// it cancels the command's context, so that it stops at its next safe point (training saves its position
// first); a second one exits at once.
func attendMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, caught, stop := withSignals(stderr)
	defer stop()
	root := newRootCmd()
	if err := checkSingleDash(root, args); err != nil {
		reportError(stderr, err, nil)
		return 1
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	sig := caught()
	reportError(stderr, err, sig)
	if sig != nil {
		return exitStatus(sig)
	}
	return 1
}

// reportError prints the error a command ended with, and the hint that follows it, if any. It prints nothing for
// an *app.ReportedError, which another process reports (this one exits with its status), nor for an error that
// only says the context was cancelled when a signal (sig) cancelled it: the signal's own message has said that
// the command is stopping.
func reportError(stderr io.Writer, err error, sig os.Signal) {
	var reported *app.ReportedError
	if !errors.As(err, &reported) && !(sig != nil && errors.Is(err, context.Canceled)) {
		fmt.Fprintln(stderr, "attend:", err)
	}
	var hint hintError
	if errors.As(err, &hint) {
		fmt.Fprintln(stderr, hint.hint)
	}
}

// withSignals returns a context cancelled by the first SIGINT or SIGTERM once the command has started its work, a
// function that reports which signal that was (nil if none came), and a function that stops listening. The
// context carries the notice app.Started gives (app.WithStartNotice): before it, the first signal exits the
// process at once with 128 + its number, since the command has nothing to save and may be blocked where no
// context reaches (opening a FIFO that no one writes); after it, a second signal exits at once.
func withSignals(stderr io.Writer) (context.Context, func() os.Signal, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var mu sync.Mutex
	var first os.Signal
	started := false
	ctx = app.WithStartNotice(ctx, func() {
		mu.Lock()
		started = true
		mu.Unlock()
	})
	go func() {
		sig, ok := <-sigs
		if !ok {
			return
		}
		mu.Lock()
		first = sig
		safePoint := started
		mu.Unlock()
		if !safePoint {
			fmt.Fprintf(stderr, "\nattend: %v: quitting now (nothing to save yet)\n", sig)
			os.Exit(exitStatus(sig))
		}
		cancel()
		fmt.Fprintf(stderr, "\nattend: %v: stopping at the next safe point (send it again to quit at once)\n", sig)
		if sig, ok = <-sigs; ok {
			fmt.Fprintf(stderr, "attend: %v again: quitting now\n", sig)
			os.Exit(exitStatus(sig))
		}
	}()
	caught := func() os.Signal {
		mu.Lock()
		defer mu.Unlock()
		return first
	}
	stop := func() {
		signal.Stop(sigs)
		close(sigs)
		cancel()
	}
	return ctx, caught, stop
}

// exitStatus is the status shells report for a command killed by sig: 128 + its number.
func exitStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// checkSingleDash refuses a long flag written with one dash, as OpenNMT-py and Marian users write them
// ("-model m.ckpt"): cobra would read it as the short flag -m with the value "odel", or as several short flags.
// It looks up the command args name and checks each argument that starts with a single dash and a letter
// against that command's long flags (with "_" read as "-": "-beam_size" is --beam-size, if there is one).
func checkSingleDash(root *cobra.Command, args []string) error {
	cmd, _, err := root.Find(args)
	if err != nil || cmd == nil {
		return nil // cobra reports an unknown command itself
	}
	for _, arg := range args {
		if arg == "--" {
			break
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "-"), "=")
		if !strings.HasPrefix(arg, "-") || strings.HasPrefix(arg, "--") || len(name) < 2 || !unicode.IsLetter(rune(name[0])) {
			continue
		}
		name = strings.ReplaceAll(name, "_", "-")
		f := cmd.Flags().Lookup(name)
		if f == nil {
			f = cmd.InheritedFlags().Lookup(name) // --quiet, --progress-every
		}
		if f != nil {
			short := ""
			if f.Shorthand != "" {
				short = fmt.Sprintf(" (or -%s, its short form)", f.Shorthand)
			}
			return fmt.Errorf("%s: attend's long flags take two dashes: --%s%s", arg, name, short)
		}
	}
	return nil
}

// hintError is an error followed, on its own line, by what to do about it (such as the command that resumes
// an interrupted run).
type hintError struct {
	err  error
	hint string
}

func (e hintError) Error() string { return e.err.Error() }
func (e hintError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "attend",
		Short: "Train attention seq2seq translation models on the CPU, translate, and see where they looked",
		Long: `attend trains a sequence-to-sequence model with attention (bidirectional LSTM encoder, additive
attention, LSTM decoder) on a parallel corpus, translates new text with it, and exports the attention.

  attend demo                      train on the built-in synthetic corpus and show the result
  attend train --src S --tgt T --out m.ckpt
  attend translate --model m.ckpt < input > output
  attend serve --model m.ckpt      translate over HTTP; a page shows where the model looked
  attend eval --hyp hyp.txt --ref ref.txt
  attend heatmap --model m.ckpt --text "ein mann fährt fahrrad ." --out attn.png
  attend align --model m.ckpt --src test.de --tgt test.en --gold gold.align
  attend plot --metrics m.metrics.jsonl --out curves.png
  attend watch m.ckpt              a page of a run learning: its curves, where it looked at each validation

Long flags take two dashes (--model); the common ones have Marian's short forms: -m --model, -i --input,
-o --output (or --out), -c --config.

Ctrl-C (or SIGTERM) stops any command and exits with status 130 (143): at once while it has nothing to keep,
at its next safe point once it has — training saves its exact position first, translate writes every finished
sentence — and then a second one quits at once.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newTrainCmd(), newTranslateCmd(), newEvalCmd(), newBPECmd(), newAverageCmd(), newLexiconCmd(), newDemoCmd(), newVersionCmd())
	root.AddCommand(newHeatmapCmd(), newAlignCmd(), newPlotCmd())
	root.AddCommand(newServeCmd(), newWatchCmd())
	progressFlags(root)
	root.SetFlagErrorFunc(flagError)
	return root
}
