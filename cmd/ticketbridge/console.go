package main

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/ticketbridge/ticketbridge/internal/config"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/statuspage"
)

// This file puts the status page (package statuspage) on the daemon's
// telemetry listener and feeds it after each cycle: the page of the one
// hotel, or the list of a fleet's hotels (fleet.go), each hotel's page
// fed by its own scheduler.

// pageHandler is what the telemetry listener needs of the status page.
type pageHandler interface {
	http.Handler
	AcceptsPost(r *http.Request) bool
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
	cs, err := config.LoadConsole(ctx, env)
	if err != nil {
		return err
	}
	opts.Token, opts.Logger = string(cs.Token), log
	opts.SecureCookie, opts.TrustedProxies, opts.ExternalHost = cs.SecureCookie, cs.TrustedProxies, cs.ExternalHost
	srv, err := statuspage.New(opts)
	if err != nil {
		return err
	}
	tel.page = srv
	if cs.Token == "" {
		log.Info("status page is read-only: put a console token in /etc/ticketbridge/console-token (the service's credential console-token) or set TICKETBRIDGE_CONSOLE_TOKEN_FILE to sign in and act", slog.String("op", "console"))
	}
	return nil
}
