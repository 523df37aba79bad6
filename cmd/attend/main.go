// Command attend trains attention sequence-to-sequence translation models on the CPU, translates with them and
// shows where they looked. Run `attend --help` for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	if err := root.ExecuteContext(ctx); err != nil {
		var exit exitCode
		if errors.As(err, &exit) {
			os.Exit(int(exit)) // the command has said why
		}
		fmt.Fprintln(os.Stderr, "attend:", err)
		os.Exit(1)
	}
}

// exitCode is an error that asks for a particular exit status; the command has already printed its message.
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "attend",
		Short: "Train attention seq2seq translation models on the CPU, translate, and see where they looked",
		Long: `attend trains a sequence-to-sequence model with attention (bidirectional LSTM encoder, additive
attention, LSTM decoder) on a parallel corpus, translates new text with it, and exports the attention.

  attend demo                      train on the built-in synthetic corpus and show the result
  attend train --src S --tgt T --out m.ckpt
  attend translate --model m.ckpt < input > output`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newTrainCmd(), newTranslateCmd(), newDemoCmd(), newVersionCmd())
	return root
}

// interruptStatus turns a training run's ErrInterrupted into exit status 130 (128 + SIGINT, as shells report an
// interrupted command) after saying how to resume; other errors pass through.
func interruptStatus(cmd *cobra.Command, err error) error {
	if errors.Is(err, model.ErrInterrupted) {
		fmt.Fprintln(cmd.ErrOrStderr(), "attend:", err)
		return exitCode(130)
	}
	return err
}

// startCPUProfile starts writing a CPU profile to path and returns the function that stops it.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
