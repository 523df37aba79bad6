package main

import (
	"errors"
	"os"
	"strings"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/app/serve"
	"github.com/attend-nmt/attend/model"
	"github.com/spf13/cobra"
)

type trainFlags struct {
	config                  string
	corpus, valid           app.Corpus
	out, resume, metrics    string
	validGold               string // Pharaoh links of the first validation pairs, for the attention's AER
	sets                    []string
	epochs, maxSteps, batch int
	seed                    uint64
	threads                 int
	noProgress              bool // plain log lines even on a terminal
	noValid                 bool // no validation, even on resume
	forceMemory             bool // train even when the estimated memory is more than the machine has
	overwrite               bool // replace the checkpoints of another run at --out
	cpuProfile              string
	watch                   string // the address of the run's watch page; "": none
}

func newTrainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train --src FILE --tgt FILE --out CKPT | --data TSV --out CKPT",
		Short: "Train a model on a parallel corpus",
		Long: `Train reads a parallel corpus (two line-aligned files, or one TSV file with the source in column 1 and
the target in column 2; .gz files are read directly), builds vocabularies, and trains. It writes the last state
to --out, the state with the best validation loss beside it (NAME.best.ckpt), and one JSON line per logged step
and per validation to the metrics file. Ctrl-C saves the exact position; --resume continues from it, validating
on the files the run started with (the checkpoint keeps their paths) unless --valid-src and --valid-tgt (or
--valid-data) name others or --no-valid turns validation off. While it runs, NAME.lock beside --out keeps a
second run from writing the same checkpoints. With --set train.guided_alignment=auto it first links the corpus
with the built-in statistical aligner (as align --statistical does) and trains the attention toward those
links, which it writes to NAME.align beside --out; --resume reads them from there.

At every validation it also writes, for the validation sentences of train.watch_sentences (default: the first
three and one chosen by the seed), the greedy translation and its attention to NAME.watch/STEP.json, with a heat
map a sentence (STEP-LINE.png; those of the last train.keep_last validations are kept). With --valid-gold it
scores the attention of the first validation pairs against gold links, as align --gold does, and logs the AER.
With --watch it serves a page of the run while it trains, and prints its URL; the page stops with the run
(attend watch NAME.ckpt shows it afterwards). --watch takes a free port of 127.0.0.1, --watch=HOST:PORT
another address (with "=": a word after a bare --watch is not its value).

Before any work, every file it will write (--out and the files beside it, --metrics, --cpuprofile) is checked
against every file it reads (the corpora, --config, --resume) and against each other: none may be the same file
as another, except --out and --resume (a run continued in place), and none may be a directory, a device, a
named pipe or a symbolic link that leads nowhere. A file there that attend did not write (notes at NAME.align,
text at --out) is never replaced. A trained model at --out (or its best or step checkpoints) is replaced only
by a run that continues it (--resume) or with --overwrite.

Every config key can be set with --set section.key=value, e.g. --set model.cell=gru --set train.lr=5e-4.

Before allocating the model, train estimates the memory it will take (weights, Adam's moments, gradients and
the activations of the largest batch) and refuses, with the figures, a model that does not fit in the memory
this machine has (MemAvailable in /proc/meminfo, or a container's cgroup limit); --force-memory trains anyway.
It also refuses vocabularies that data.min_freq or data.max_vocab leave without a word, and warns when they make
more than a tenth of a side's tokens <unk>.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := app.TrainRequest{
				ConfigFile: f.config, Overrides: func(c *model.Config) error { return applyTrainFlags(cmd, &f, c) },
				Train: f.corpus, Valid: f.valid, NoValid: f.noValid, Out: f.out, Resume: f.resume, MetricsPath: f.metrics, ValidGold: f.validGold,
				CPUProfile: f.cpuProfile, Stdout: cmd.OutOrStdout(), ForceMemory: f.forceMemory, Overwrite: f.overwrite,
				Recorder: newRecorder(cmd.OutOrStdout(), progressOf(cmd), f.noProgress)}
			lead := func() (func(), error) {
				return startWatch(cmd, f.watch, []serve.WatchRun{{Checkpoint: req.Out, Metrics: req.Metrics()}})
			}
			err := app.RunTrain(cmd.Context(), app.TrainOptions{Stderr: cmd.ErrOrStderr(), Lead: lead, TrainRequest: req})
			var reported *app.ReportedError // the lead process reports it, and says how to resume
			var stopped *model.InterruptedError
			if errors.As(err, &stopped) && !errors.As(err, &reported) {
				return hintError{err: err, hint: "resume with: " + resumeCommand(os.Args, stopped.Path)}
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "YAML config file (default: the built-in default config, configs/default.yaml: small widths, cased text, 8,000 BPE merges)")
	fl.StringVar(&f.corpus.Src, "src", "", "training source file, one sentence per line")
	fl.StringVar(&f.corpus.Tgt, "tgt", "", "training target file, line-aligned with --src")
	fl.StringVar(&f.corpus.TSV, "data", "", "training file of \"source<TAB>target\" lines (extra columns ignored) or \"source ||| target\" lines")
	fl.StringVar(&f.valid.Src, "valid-src", "", "validation source file (on --resume: instead of the checkpoint's)")
	fl.StringVar(&f.valid.Tgt, "valid-tgt", "", "validation target file (on --resume: instead of the checkpoint's)")
	fl.StringVar(&f.valid.TSV, "valid-data", "", "validation file, as --data (on --resume: instead of the checkpoint's)")
	fl.StringVar(&f.validGold, "valid-gold", "", "Pharaoh file of gold links (from 0) of the first validation pairs: the AER of the attention at every validation")
	fl.BoolVar(&f.noValid, "no-valid", false, "no validation, even when resuming a run that validated")
	fl.StringVarP(&f.out, "out", "o", "", "checkpoint to write (required)")
	fl.StringVar(&f.resume, "resume", "", "checkpoint to continue training from (validates on the files its run validated on, unless --valid-* or --no-valid say otherwise)")
	fl.BoolVar(&f.overwrite, "overwrite", false, "replace the trained model at --out (and its best and step checkpoints) with a new run; without it such a run is refused (--resume continues it)")
	fl.StringVar(&f.metrics, "metrics", "", "metrics JSON-lines file (default: beside --out)")
	fl.StringArrayVar(&f.sets, "set", nil, "override a config key: section.key=value (repeatable)")
	fl.IntVar(&f.epochs, "epochs", 0, "number of epochs (train.epochs)")
	fl.IntVar(&f.maxSteps, "max-steps", 0, "stop after this many steps in all (train.max_steps)")
	fl.IntVar(&f.batch, "batch", 0, "sentence pairs per batch (data.batch)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed (train.seed)")
	fl.IntVar(&f.threads, "threads", 0, "CPU threads (train.threads)")
	fl.BoolVar(&f.noProgress, "no-progress", false, "plain log lines instead of a progress bar (the default when stderr is not a terminal)")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	fl.BoolVar(&f.forceMemory, "force-memory", false, "train even when the model's estimated memory is more than this machine has (a warning instead of the refusal)")
	watchFlag(fl, &f.watch)
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

// applyTrainFlags applies the shortcut flags the user gave, then every --set, to cfg.
func applyTrainFlags(cmd *cobra.Command, f *trainFlags, cfg *model.Config) error {
	fl := cmd.Flags()
	if fl.Changed("epochs") {
		cfg.Train.Epochs = f.epochs
	}
	if fl.Changed("max-steps") {
		cfg.Train.MaxSteps = f.maxSteps
	}
	if fl.Changed("batch") {
		cfg.Data.Batch = f.batch
	}
	if fl.Changed("seed") {
		cfg.Train.Seed = f.seed
	}
	if fl.Changed("threads") {
		cfg.Train.Threads = f.threads
	}
	for _, s := range f.sets {
		if err := cfg.Set(s); err != nil {
			return err
		}
	}
	return nil
}

// resumeCommand is the command line that continues an interrupted run: the same arguments, with --resume
// pointing at the saved checkpoint (replacing any earlier --resume), quoted for a POSIX shell.
func resumeCommand(args []string, checkpoint string) string {
	words := []string{"attend"}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--resume":
			i++ // skip its value
			continue
		case strings.HasPrefix(a, "--resume="):
			continue
		}
		words = append(words, shellQuote(a))
	}
	return strings.Join(append(words, "--resume", shellQuote(checkpoint)), " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
