package serve

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/attend-nmt/attend/app"
	"github.com/attend-nmt/attend/internal/plural"
	"github.com/attend-nmt/attend/model"
)

// RunOptions is everything `attend serve` reads from its command line: the server's Options (but Decode, which
// Search gives, and Log, which is Stderr), which Run checks as the flags that set them.
type RunOptions struct {
	app.Streams
	Options
	Model  string
	Search app.SearchFlags
	// Reload reloads the checkpoint from Model each time it receives a signal (SIGHUP), logging the outcome to
	// Stderr; nil never reloads.
	Reload <-chan os.Signal
}

// Run checks o, loads the checkpoint, listens on o.Addr (warning on o.Stderr when that is every interface),
// prints the server's address to o.Stdout and serves until ctx is cancelled (see Server.Serve).
func Run(ctx context.Context, o RunOptions) error {
	switch {
	case o.Addr == "":
		// net.Listen would take "" for every interface, where Options.Addr takes it for a loopback address.
		return fmt.Errorf("--addr is empty; want host:port such as 127.0.0.1:8080, or :PORT for every interface")
	case o.MaxBody < 1:
		return fmt.Errorf("--max-body is %d; want at least 1 byte", o.MaxBody)
	case o.MaxSentences < 1:
		return fmt.Errorf("--max-sentences is %d; want at least 1", o.MaxSentences)
	case o.MaxSourceLen < 0:
		return fmt.Errorf("--max-source-len is %d; want 0 (the checkpoint's decode.max_len) or more", o.MaxSourceLen)
	case o.Queue < 1:
		return fmt.Errorf("--queue is %d; want at least 1", o.Queue)
	case o.Timeout <= 0:
		return fmt.Errorf("--timeout is %v; want a positive duration such as 30s", o.Timeout)
	case o.Wait < 0:
		return fmt.Errorf("--wait is %v; want 0 or a short duration such as 5ms", o.Wait)
	}
	ck, err := model.Load(o.Model)
	if err != nil {
		return err
	}
	decode, err := o.Search.Options(o.Stderr, o.Model, ck, nil)
	if err != nil {
		return err
	}
	o.Decode, o.Log = decode, o.Stderr
	srv, err := New(o.Model, ck, o.Options)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", o.Addr)
	if err != nil {
		srv.Close()
		return fmt.Errorf("--addr %s: %w", o.Addr, err)
	}
	if everyInterface(o.Addr) {
		fmt.Fprintf(o.Stderr, "attend serve: WARNING: --addr %s listens on EVERY network interface: anyone who can reach this machine\n"+
			"attend serve: WARNING: can translate with it, unauthenticated, and read its config; give --addr 127.0.0.1:PORT to keep it local,\n"+
			"attend serve: WARNING: or the address of one interface\n", o.Addr)
	}
	fmt.Fprintf(o.Stdout, "attend serve: %s (step %d) on http://%s/ — open it in a browser; Ctrl-C stops\n", o.Model, srv.Step(), l.Addr())
	if len(o.Watch) > 0 {
		fmt.Fprintf(o.Stdout, "attend serve: the watch page of %s at http://%s/watch\n", plural.Count(len(o.Watch), "run"), l.Addr())
	}
	app.Started(ctx) // a signal now lets the requests in flight finish (Serve)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-o.Reload:
			}
			if err := srv.Reload(); err != nil {
				fmt.Fprintf(o.Stderr, "attend serve: SIGHUP: %v\n", err)
				continue
			}
			fmt.Fprintf(o.Stderr, "attend serve: SIGHUP: reloaded %s (step %d)\n", o.Model, srv.Step())
		}
	}()
	return srv.Serve(ctx, l)
}
