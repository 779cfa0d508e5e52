package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/cmd/ticketbridge/statuspage"
	"github.com/ticketbridge/ticketbridge/sync"
)

// This file puts the status page (package statuspage) on the daemon's
// telemetry listener and feeds it after each cycle.

// consoleConfig is read from the daemon's environment.
type consoleConfig struct {
	// TokenFile holds the console token that signs in to the status page
	// and authorises `ticketbridge retry` and `skip` while the daemon runs;
	// empty keeps the page read-only.
	TokenFile string `env:"TICKETBRIDGE_CONSOLE_TOKEN_FILE"`
}

// loadConsoleToken reads TICKETBRIDGE_CONSOLE_TOKEN_FILE and the token in
// it; "" when the variable is unset.
func loadConsoleToken(ctx context.Context, env envconfig.Lookuper) (string, error) {
	var c consoleConfig
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &c, Lookuper: env}); err != nil {
		return "", fmt.Errorf("read configuration: %w", err)
	}
	if c.TokenFile = strings.TrimSpace(c.TokenFile); c.TokenFile == "" {
		return "", nil
	}
	tok, err := statuspage.ReadToken(c.TokenFile)
	if err != nil {
		return "", fmt.Errorf("read configuration: TICKETBRIDGE_CONSOLE_TOKEN_FILE: %w", err)
	}
	return tok, nil
}

// pageHandler is what the telemetry listener needs of the status page.
type pageHandler interface {
	http.Handler
	AcceptsPost(r *http.Request) bool
}

// console is the daemon's status page; a nil *console (no listener) does
// nothing.
type console struct {
	hotel *statuspage.Hotel
}

// setupConsole makes the status page of w's hotel and hands it to tel,
// which serves it at / once started. Without a listener it makes none.
func setupConsole(ctx context.Context, w *wiring, tel *telemetry) (*console, error) {
	if tel.cfg.Listen == "" {
		return nil, nil
	}
	tok, err := loadConsoleToken(ctx, w.env)
	if err != nil {
		return nil, err
	}
	h := statuspage.NewHotel("", w.store, nil)
	if err := h.Refresh(); err != nil {
		w.log.Warn("read status for the status page: "+err.Error(), slog.String("op", "console"))
	}
	srv, err := statuspage.New(statuspage.Options{Source: h, Token: tok, Logger: w.log})
	if err != nil {
		return nil, err
	}
	tel.page = srv
	if tok == "" {
		w.log.Info("status page is read-only: set TICKETBRIDGE_CONSOLE_TOKEN_FILE to sign in and act", slog.String("op", "console"))
	}
	return &console{hotel: h}, nil
}

// cycleDone gives the page the cycle's report and the status read after
// it, nil when the daemon read none this time.
func (c *console) cycleDone(r sync.Report, s *sync.Status) {
	if c == nil {
		return
	}
	if s == nil {
		c.hotel.CycleReported(r) // the daemon read no status this time
		return
	}
	_ = c.hotel.CycleDone(r, s)
}
