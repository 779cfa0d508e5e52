package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/lmittmann/tint"

	"github.com/ticketbridge/ticketbridge/internal/config"
)

// newLogger returns the program's logger: tint's coloured lines on a
// terminal, JSON otherwise (journald, files, pipes). Under systemd, with
// format auto, text lines without colour or time (journald adds its own)
// are written instead, because journalctl shows them well.
func newLogger(w io.Writer, format, level string) *slog.Logger {
	lvl, err := config.ParseLevel(level)
	if err != nil {
		lvl = slog.LevelInfo
	}
	if format == "auto" {
		switch {
		case isTerminal(w):
			format = "tint"
		case os.Getenv("JOURNAL_STREAM") != "":
			format = "journal"
		default:
			format = "json"
		}
	}
	var h slog.Handler
	switch format {
	case "tint":
		h = tint.NewTextHandler(w, &tint.Options{Level: lvl, TimeFormat: time.TimeOnly})
	case "text":
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl})
	case "journal":
		h = slog.NewTextHandler(w, &slog.HandlerOptions{Level: lvl, ReplaceAttr: dropTime})
	default:
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})
	}
	return slog.New(h)
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// isTerminal reports whether w is a character device such as a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// warnTo returns a warn function that logs to log.
func warnTo(log *slog.Logger) func(string) {
	return func(s string) { log.Warn(s, slog.String("op", "config")) }
}

// warnStderr returns a warn function that prints to stderr, for the
// commands that keep their log for errors.
func warnStderr(stderr io.Writer) func(string) {
	return func(s string) { fmt.Fprintln(stderr, "ticketbridge: warning:", s) }
}
