package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// loadEnv reads the configuration of the commands that sync: the daemon's
// own, the engine's, and the logger made from it. It logs a warning for
// each TICKETBRIDGE_* name that is not a variable.
func loadEnv(ctx context.Context, ef *envFlag, stderr io.Writer) (config.Source, config.Daemon, sync.Config, *slog.Logger, error) {
	src, err := ef.source()
	if err != nil {
		return src, config.Daemon{}, sync.Config{}, nil, err
	}
	if n := src.SkipNote(); n != "" {
		fmt.Fprintln(stderr, "ticketbridge:", n)
	}
	cfg, err := config.LoadDaemon(ctx, src.Env)
	if err != nil {
		return src, cfg, sync.Config{}, nil, src.Explain(err)
	}
	sc, err := sync.LoadConfig(ctx, src.Env)
	if err != nil {
		return src, cfg, sc, nil, src.Explain(fmt.Errorf("read configuration: %w", errors.Unwrap(err)))
	}
	log := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if d := src.Describe(); d != "" {
		log.Debug("configuration from "+d, slog.String("op", "config"))
	}
	for _, w := range config.UnknownVariables(ctx, src) {
		log.Warn(w, slog.String("op", "config"))
	}
	return src, cfg, sc, log, nil
}

// loadPlain reads the daemon's own configuration for the commands that
// only read the state file (status, state backup), printing a warning to
// stderr for each TICKETBRIDGE_* name that is not a variable.
func loadPlain(ctx context.Context, ef *envFlag, stderr io.Writer) (config.Source, config.Daemon, error) {
	src, err := ef.source()
	if err != nil {
		return src, config.Daemon{}, err
	}
	if n := src.SkipNote(); n != "" {
		fmt.Fprintln(stderr, "ticketbridge:", n)
	}
	cfg, err := config.LoadDaemon(ctx, src.Env)
	if err != nil {
		return src, cfg, src.Explain(err)
	}
	for _, w := range config.UnknownVariables(ctx, src) {
		fmt.Fprintln(stderr, "ticketbridge: warning:", w)
	}
	return src, cfg, nil
}
