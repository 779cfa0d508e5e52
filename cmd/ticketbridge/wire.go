package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// daemonAdapters is every helpdesk adapter the daemon can run, by
// TICKETBRIDGE_ADAPTER.
func daemonAdapters() adapters.Registry {
	return adapters.Registry{
		files.Name:     files.Factory,
		rt.Name:        rt.Factory,
		zendesk.Name:   zendesk.Factory,
		freshdesk.Name: freshdesk.Factory,
		zammad.Name:    zammad.Factory,
		webhook.Name:   webhook.Factory,
	}
}

// wiring is everything a command that syncs needs, built from the
// configuration: the logger, the API client, the adapter, the state file
// and the engine. Close releases what it opened.
type wiring struct {
	env     envconfig.Lookuper
	cfg     Config
	syncCfg sync.Config
	log     *slog.Logger
	client  *guestapi.Client
	hd      adapters.Helpdesk
	store   *state.Store // nil for a dry run
	engine  *sync.Engine // nil for a dry run
	deps    sync.Deps

	afterCycle  func(sync.Report, error)
	afterBackup func(path string, err error)
}

// wireOptions are the parts of the wiring a command or a test replaces.
type wireOptions struct {
	// Registry holds the adapters; nil means daemonAdapters.
	Registry adapters.Registry
	// HTTPClient makes the API requests, inside Chain; nil means
	// newAPIClient's.
	HTTPClient *http.Client
	// Chain is the policy of the hotel's API and helpdesk clients: the
	// request slots of a fleet, the lease guard of a hotel held under a
	// lease. The adapter gets it through adapters.Deps: its HTTP
	// requests as Transport, its guard for what else it writes.
	Chain httpx.Chain
	// DryRun leaves the state file closed and the engine unmade (the dry
	// run opens a copy itself) and opens the adapter read-only.
	DryRun bool
	// AfterCycle is called after each cycle the daemon runs.
	AfterCycle func(sync.Report, error)
	// AfterBackup is called after each backup the daemon makes on SIGUSR1.
	AfterBackup func(path string, err error)
	// Hotel names the hotel of a daemon of many; empty for one hotel. A
	// state database that holds many hotels keeps this one's under it.
	Hotel string
	// Fence is the fence of the hotel's lease (see state.Options.Fence);
	// zero for a state file, or a database written without a lease.
	Fence int64
}

// loadEnv reads the configuration of the commands that sync: the daemon's
// own, the engine's, and the logger made from it. It logs a warning for
// each TICKETBRIDGE_* name that is not a variable.
func loadEnv(ctx context.Context, ef *envFlag, stderr io.Writer) (configSource, Config, sync.Config, *slog.Logger, error) {
	src, err := ef.source(ctx)
	if err != nil {
		return src, Config{}, sync.Config{}, nil, err
	}
	if n := src.skipNote(); n != "" {
		fmt.Fprintln(stderr, "ticketbridge:", n)
	}
	cfg, err := loadConfig(ctx, src.env)
	if err != nil {
		return src, cfg, sync.Config{}, nil, src.explain(err)
	}
	sc, err := sync.LoadConfig(ctx, src.env)
	if err != nil {
		return src, cfg, sc, nil, src.explain(fmt.Errorf("read configuration: %w", errors.Unwrap(err)))
	}
	log := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if d := src.describe(); d != "" {
		log.Debug("configuration from "+d, slog.String("op", "config"))
	}
	for _, w := range unknownVariables(ctx, src) {
		log.Warn(w, slog.String("op", "config"))
	}
	return src, cfg, sc, log, nil
}

// loadPlain reads the daemon's own configuration for the commands that
// only read the state file (status, state backup), printing a warning to
// stderr for each TICKETBRIDGE_* name that is not a variable.
func loadPlain(ctx context.Context, ef *envFlag, stderr io.Writer) (configSource, Config, error) {
	src, err := ef.source(ctx)
	if err != nil {
		return src, Config{}, err
	}
	if n := src.skipNote(); n != "" {
		fmt.Fprintln(stderr, "ticketbridge:", n)
	}
	cfg, err := loadConfig(ctx, src.env)
	if err != nil {
		return src, cfg, src.explain(err)
	}
	for _, w := range unknownVariables(ctx, src) {
		fmt.Fprintln(stderr, "ticketbridge: warning:", w)
	}
	return src, cfg, nil
}

// wire builds the engine from the configuration. On error everything it
// opened is closed again.
func wire(ctx context.Context, env envconfig.Lookuper, cfg Config, sc sync.Config, log *slog.Logger, opts wireOptions) (_ *wiring, err error) {
	w := &wiring{env: env, cfg: cfg, syncCfg: sc, log: log, afterCycle: opts.AfterCycle, afterBackup: opts.AfterBackup}
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if err := checkAPIURL(cfg.APIURL, cfg.AllowInsecureHTTP); err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	to, err := adapters.ParseStatusPairs(cfg.StatusToHelpdesk)
	if err != nil {
		return nil, fmt.Errorf("read configuration: TICKETBRIDGE_STATUS_TO_HELPDESK: %w", err)
	}
	from, err := adapters.ParseReverseStatusPairs(cfg.StatusFromHelpdesk)
	if err != nil {
		return nil, fmt.Errorf("read configuration: TICKETBRIDGE_STATUS_FROM_HELPDESK: %w", err)
	}
	key, err := cfg.apiKey(env)
	if err != nil {
		return nil, err
	}
	api := opts.HTTPClient
	if api == nil {
		api = newAPIClient(4)
	}
	w.client, err = guestapi.New(guestapi.Config{
		BaseURL: cfg.APIURL,
		APIKey:  key,
		// A key rotated in its file is taken at the first 401, without a
		// restart (under systemd the credential is a copy made at start:
		// there a restart takes it).
		Rekey:      func() (string, error) { return cfg.apiKey(env) },
		HTTPClient: opts.Chain.Client(api),
		Logger:     log, // the client names each request's op itself
	})
	if err != nil {
		return nil, fmt.Errorf("read configuration: TICKETBRIDGE_API_URL or the API key: %w", err)
	}
	if !opts.DryRun {
		w.store, err = openState(cfg, log, opts.Fence)
		if err != nil {
			return nil, err
		}
	}
	reg := opts.Registry
	if reg == nil {
		reg = daemonAdapters()
	}
	alog := log.With("adapter", cfg.Adapter)
	w.hd, err = reg.Open(ctx, cfg.Adapter, adapters.Deps{
		Env: env, Logger: alog, StatusToHelpdesk: to, StatusFromHelpdesk: from, ReadOnly: opts.DryRun,
		StateDir: cfg.stateDir(), Transport: opts.Chain.Transport(nil), Guard: opts.Chain.Guard,
	})
	if err != nil {
		if errors.Is(err, adapters.ErrUnknownAdapter) {
			return nil, fmt.Errorf("read configuration: TICKETBRIDGE_ADAPTER=%q: %w", cfg.Adapter, err)
		}
		return nil, err
	}
	w.deps = sync.Deps{API: w.client, Helpdesk: w.hd, Store: w.store, Logger: alog}
	if w.store != nil {
		w.engine, err = sync.New(sc, w.deps)
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// newAPIClient returns an HTTP client with the timeouts guestapi's
// default client has, keeping up to idle connections per host.
func newAPIClient(idle int) *http.Client {
	return httpx.NewClient(guestapi.DefaultRequestTimeout, idle)
}

// openState opens the state file for writing, explaining a lock held by a
// running daemon.
func openState(cfg Config, log *slog.Logger, fence int64) (*state.Store, error) {
	st, err := state.Open(cfg.State, state.Options{Logger: log, Hotel: cfg.Hotel, Fence: fence})
	if errors.Is(err, state.ErrLocked) {
		return nil, fmt.Errorf("%w\nis the daemon running? `ticketbridge status` works alongside it; stop it (systemctl stop ticketbridge) to run this command", err)
	}
	return st, err
}

// Close closes the adapter and the state file and returns the first error.
func (w *wiring) Close() error {
	var errs []error
	if w.hd != nil {
		errs = append(errs, w.hd.Close())
		w.hd = nil
	}
	if w.store != nil {
		errs = append(errs, w.store.Close())
		w.store = nil
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
