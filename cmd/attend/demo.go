package main

import (
	"path/filepath"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/app/serve"
	"github.com/spf13/cobra"
)

// demoWatchEvery is how often (in steps) demo --watch validates: the demo's epoch is 250 steps, and by its
// end the attention has already found the reordering.
const demoWatchEvery = 25

func newDemoCmd() *cobra.Command {
	req := app.DemoRequest{Train: 8000, Valid: 500, Test: 1000}
	var threads int
	var seed uint64
	var noProgress bool
	var watch string
	cmd := &cobra.Command{
		Use:   "demo [--out DIR]",
		Short: "Generate the built-in synthetic corpus, train on it and report held-out accuracy",
		Long: `Demo generates a toy language pair with word reordering (verb-final, adjectives after nouns) and
agreement, whose correct alignment is known; trains the demo model on it (a couple of minutes on two cores);
translates the held-out test set; and prints exact-match accuracy and the alignment error rate of the attention
against the generator's gold alignment. Everything it writes goes to --out: the corpus (with test.align, the
gold), checkpoints, metrics, heatmap.png (the attention of one test sentence: the reordering shows as an
off-diagonal pattern) and heatmaps/index.html (a gallery of the first test sentences). The directory is the
demo's: a second run replaces what the first wrote there.

With --watch it serves the watch page of its training run (DIR/demo.ckpt) until it ends, and prints its URL,
and it validates every 25 steps instead of once an epoch, so that the page shows the attention of the watched
validation sentences going from uniform to the reordering diagonal while the AER of the attention against the
corpus's gold alignment falls (see attend watch). The model trains the same; its best checkpoint is chosen among
those validations. --watch takes a free port of 127.0.0.1, --watch=HOST:PORT another address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req.Config = app.DemoConfig()
			if cmd.Flags().Changed("threads") {
				req.Config.Train.Threads = threads
			}
			if cmd.Flags().Changed("seed") {
				req.Config.Train.Seed = seed
			}
			if cmd.Flags().Changed("watch") {
				req.Config.Train.ValidEvery = demoWatchEvery
			}
			req.Stdout = cmd.OutOrStdout()
			req.Recorder = newRecorder(cmd.OutOrStdout(), progressOf(cmd), noProgress)
			ckpt := filepath.Join(req.Dir, "demo.ckpt") // the checkpoint app.Demo trains
			stop, err := startWatch(cmd, watch, []serve.WatchRun{{Checkpoint: ckpt, Metrics: app.MetricsPath(ckpt)}})
			if err != nil {
				return err
			}
			defer stop()
			_, err = app.Demo(cmd.Context(), req)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Dir, "out", "demo", "directory for the corpus, checkpoints and outputs")
	fl.IntVar(&threads, "threads", 2, "CPU threads")
	fl.Uint64Var(&seed, "seed", 1, "random seed for the corpus and the training run")
	fl.BoolVar(&noProgress, "no-progress", false, "plain log lines instead of a progress bar (the default when stderr is not a terminal)")
	watchFlag(fl, &watch)
	return cmd
}
