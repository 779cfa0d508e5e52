package main

import (
	"context"
	"log/slog"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// This file puts the status page (package statuspage) on the daemon's
// telemetry listener: the page of a fleet of one's hotel, or the list of
// a fleet's hotels (fleet.go), each hotel's page fed by its own scheduler.

// setupPage makes the status page of opts (the Hotels of a fleet, or of a
// fleet of one), with the console token of env, for tel to serve at
// /. Without a listener it makes none.
func setupPage(ctx context.Context, env envconfig.Lookuper, tel *telemetry.Telemetry, log *slog.Logger, opts statuspage.Options) (telemetry.Page, error) {
	if !tel.Listens() {
		return nil, nil
	}
	cs, err := config.LoadConsole(ctx, env)
	if err != nil {
		return nil, err
	}
	opts.Token, opts.Logger = string(cs.Token), log
	opts.SecureCookie, opts.TrustedProxies, opts.ExternalHost = cs.SecureCookie, cs.TrustedProxies, cs.ExternalHost
	opts.Listen, opts.AllowedHosts = tel.Listen(), cs.AllowedHosts
	srv, err := statuspage.New(opts)
	if err != nil {
		return nil, err
	}
	if cs.Token == "" {
		log.Info("status page is read-only: put a console token in /etc/ticketbridge/console-token (the service's credential console-token) or set TICKETBRIDGE_CONSOLE_TOKEN_FILE to sign in and act", slog.String("op", "console"))
	}
	return srv, nil
}
