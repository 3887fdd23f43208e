package main

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
)

// lazySink hands what WithName and WithValues add to the sink under it only when a line is written.
// controller-runtime gives every reconcile a logger carrying its controller, object and reconcile ID, and
// zap encodes such values the moment they are added: with a thousand releases reconciled at once that was a
// seventh of what the manager allocated, for loggers that mostly write nothing.
type lazySink struct {
	base   logr.LogSink
	names  []string
	values []any

	once sync.Once
	full logr.LogSink
}

// lazyLogger wraps l's sink, which attributes each line one frame further up: past this sink's.
func lazyLogger(l logr.Logger) logr.Logger {
	return logr.New(&lazySink{base: l.WithCallDepth(1).GetSink()})
}

// Init does nothing: the sink under it was initialised by its own logger.
func (s *lazySink) Init(logr.RuntimeInfo) {}

// Enabled depends on the level only, not on names or values.
func (s *lazySink) Enabled(level int) bool {
	return s.base.Enabled(level)
}

func (s *lazySink) Info(level int, msg string, keysAndValues ...any) {
	s.sink().Info(level, msg, keysAndValues...)
}

func (s *lazySink) Error(err error, msg string, keysAndValues ...any) {
	s.sink().Error(err, msg, keysAndValues...)
}

func (s *lazySink) WithValues(keysAndValues ...any) logr.LogSink {
	return &lazySink{base: s.base, names: s.names, values: append(slices.Clip(s.values), keysAndValues...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{base: s.base, names: append(slices.Clip(s.names), name), values: s.values}
}

// WithCallDepth offsets the sink under it, when it can be.
func (s *lazySink) WithCallDepth(depth int) logr.LogSink {
	base, ok := s.base.(logr.CallDepthLogSink)
	if !ok {
		return s
	}
	return &lazySink{base: base.WithCallDepth(depth), names: s.names, values: s.values}
}

// sink is the sink under it with the names and values applied, built at the first line.
func (s *lazySink) sink() logr.LogSink {
	s.once.Do(func() {
		full := s.base
		for _, name := range s.names {
			full = full.WithName(name)
		}
		if len(s.values) > 0 {
			full = full.WithValues(s.values...)
		}
		s.full = full
	})
	return s.full
}
