package fleet

import (
	"context"
	"io"
	"log/slog"
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
