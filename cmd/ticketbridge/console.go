package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// This file puts the status page (package statuspage) on the daemon's
// telemetry listener: the page of a fleet of one's hotel, or the list of
// a fleet's hotels (fleet.go), each hotel's page fed by its own scheduler;
// and gives the commands that ask the running daemon its console's
// client, with the same listener and token.

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

// consoleClient returns the client of the running daemon's console for
// the command name, on the listener and with the console token of env,
// for the hotel hotel of a daemon of many ("" for a daemon of one). act
// says the command changes something, which needs the token.
func consoleClient(ctx context.Context, env envconfig.Lookuper, name, hotel string, act bool) (*statuspage.Client, error) {
	tc, err := config.LoadTelemetry(ctx, env)
	if err != nil {
		return nil, err
	}
	cs, err := config.LoadConsole(ctx, env)
	if err != nil {
		return nil, err
	}
	if tc.Listen == "" || (cs.Token == "" && act) {
		return nil, fmt.Errorf("the daemon holds the state file, and %s while it runs needs TICKETBRIDGE_LISTEN and a console token (/etc/ticketbridge/console-token for the service, or TICKETBRIDGE_CONSOLE_TOKEN_FILE) as the daemon has them; or stop the daemon and run this again", name)
	}
	return statuspage.NewClient(tc.Listen, string(cs.Token), hotel), nil
}
