package fleet

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
)

// discard is a Logger for tests that do not count the lines.
var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// logCount counts the log records it is given.
type logCount struct{ n atomic.Int64 }

func (l *logCount) logger() *slog.Logger { return slog.New(l) }

func (l *logCount) Enabled(context.Context, slog.Level) bool  { return true }
func (l *logCount) Handle(context.Context, slog.Record) error { l.n.Add(1); return nil }
func (l *logCount) WithAttrs([]slog.Attr) slog.Handler        { return l }
func (l *logCount) WithGroup(string) slog.Handler             { return l }

// logErrs keeps the "err" attribute of each log record it is given: the
// error of a sync that began a stretch of local mode.
type logErrs struct {
	mu   sync.Mutex
	errs []error
}

func (l *logErrs) logger() *slog.Logger { return slog.New(l) }

func (l *logErrs) Enabled(context.Context, slog.Level) bool { return true }
func (l *logErrs) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}
func (l *logErrs) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logErrs) WithGroup(string) slog.Handler      { return l }

// all returns the errors kept so far.
func (l *logErrs) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}
