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
// telemetry listener and feeds it after each cycle: the page of the one
// hotel, or the list of a fleet's hotels (fleet.go), each hotel's page
// fed by its own scheduler.

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
	c := newConsole(w, "")
	if err := setupPage(ctx, w.env, tel, w.log, statuspage.Options{Source: c.hotel}); err != nil {
		return nil, err
	}
	return c, nil
}

// setupPage makes the status page of opts (one hotel's Source, or the
// Hotels of a fleet), with the console token of env, and hands it to tel,
// which serves it at / once started. Without a listener it makes none.
func setupPage(ctx context.Context, env envconfig.Lookuper, tel *telemetry, log *slog.Logger, opts statuspage.Options) error {
	if tel.cfg.Listen == "" {
		return nil
	}
	tok, err := loadConsoleToken(ctx, env)
	if err != nil {
		return err
	}
	opts.Token, opts.Logger = tok, log
	srv, err := statuspage.New(opts)
	if err != nil {
		return err
	}
	tel.page = srv
	if tok == "" {
		log.Info("status page is read-only: set TICKETBRIDGE_CONSOLE_TOKEN_FILE to sign in and act", slog.String("op", "console"))
	}
	return nil
}

// newConsole returns the page's source of w's hotel, named name ("" for
// a daemon's one hotel), with the status read from its state. A hotel of
// many ("" excepted) keeps only counts in memory and reads its request
// list when its pages are viewed (statuspage.Hotel.OnDemand).
func newConsole(w *wiring, name string) *console {
	h := statuspage.NewHotel(name, w.store, nil)
	if name != "" {
		h.OnDemand()
	}
	if err := h.Refresh(); err != nil {
		w.log.Warn("read status for the status page: "+err.Error(), slog.String("op", "console"))
	}
	return &console{hotel: h}
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
