package app

import "context"

// startedKey is the key of the notice that a context carries for Started.
type startedKey struct{}

// WithStartNotice returns a copy of ctx that carries started, for Started to call. attend's command line gives
// every command such a context: until the command calls Started, the first SIGINT or SIGTERM ends the process at
// once, since nothing would be saved by waiting and a command blocked in a system call (opening a FIFO that no
// one writes) could never notice a cancelled context; afterwards the signal cancels ctx, and the command stops
// at its next safe point.
func WithStartNotice(ctx context.Context, started func()) context.Context {
	return context.WithValue(ctx, startedKey{}, started)
}

// Started says, through ctx, that the command's work has begun and that it now stops at a safe point when ctx is
// cancelled, keeping what it did: training once its position can be saved, translate and bpe apply once they
// write their output as they go, serve once it listens (it answers the requests in flight), bpe learn while it
// writes its merges. A command that would keep nothing by stopping gently never calls it. It does nothing when
// ctx carries no notice (WithStartNotice), and may be called more than once.
func Started(ctx context.Context) {
	if started, ok := ctx.Value(startedKey{}).(func()); ok {
		started()
	}
}
