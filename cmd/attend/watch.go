package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/app/serve"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// defaultWatchAddr is where `attend watch` serves its page; --watch without an address takes a free port of
// the loopback address instead, so that runs side by side never collide.
const (
	defaultWatchAddr = "127.0.0.1:8090"
	freeWatchAddr    = "127.0.0.1:0"
)

// watchPageHelp says what the watch page shows, for the commands' help.
const watchPageHelp = `The watch page shows each run's curves as they come (training loss, validation perplexity, BLEU with
train.valid_bleu, the attention's AER with --valid-gold, training speed) and, for each sentence the run
watches (train.watch_sentences), its attention at the latest validation as a heat map, with a slider back
through every earlier validation: an attention model that learns shows its diagonal forming there. It reads
the files the run writes (NAME.metrics.jsonl and NAME.watch/STEP.json) every few seconds.`

func newWatchCmd() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "watch CKPT|DIR... [--addr 127.0.0.1:8090]",
		Short: "Serve a page of runs learning: their curves and where their watched sentences looked, validation by validation",
		Long: `Watch serves, on localhost unless --addr says otherwise, a page of one or more training runs, finished or
running, side by side (a guided run beside an unguided one, say), and prints its URL. Give each run as its
checkpoint (NAME.ckpt, which need not exist yet: a run that has not validated shows as empty) or a folder,
whose runs are those with NAME.metrics.jsonl or NAME.watch in it. attend train --watch and attend demo --watch
serve the same page while they train, and attend serve --watch beside the translation page.

` + watchPageHelp + `

API: GET /v1/watch (the runs, numbered from 0, with their curves and the steps of their records) and
GET /v1/watch/RUN/STEP (a record). The server has serve's guards: requests must name the server in their
Host header (for a loopback --addr, localhost or a loopback address), and the page loads nothing from
elsewhere. Ctrl-C stops it.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			runs, err := serve.WatchRuns(args)
			if err != nil {
				return err
			}
			stop, err := startWatch(cmd, addr, runs)
			if err != nil {
				return err
			}
			defer stop()
			app.Started(cmd.Context()) // Ctrl-C now stops the server
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", defaultWatchAddr, "address to listen on (host:port; port 0 picks a free one)")
	return cmd
}

// watchFlag adds --watch [ADDR] to fl: the address of the watch page of the command's run, by default a free
// port of the loopback address; without the flag there is no page.
func watchFlag(fl *pflag.FlagSet, addr *string) {
	fl.StringVar(addr, "watch", "", "serve the run's watch page while it trains (see attend watch): --watch for a free port of 127.0.0.1, --watch=HOST:PORT for another address")
	fl.Lookup("watch").NoOptDefVal = freeWatchAddr
}

// startWatch starts the watch page of runs on addr ("": no page) for cmd and prints its URL on stderr. The
// function it returns stops it.
func startWatch(cmd *cobra.Command, addr string, runs []serve.WatchRun) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	s, err := serve.StartWatch(cmd.Context(), addr, runs, cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = filepath.Base(r.Checkpoint)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "attend %s: watch %s at %s\n", cmd.Name(), strings.Join(names, ", "), s.URL)
	return s.Stop, nil
}
