package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/ticketbridge/ticketbridge/internal/fleet"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/internal/version"
)

// serveFleet runs f until ctx ends: SIGHUP (on hup) reloads it (the
// hotels directory, or the secret files of a fleet of one), SIGUSR1 (on
// usr1) backs up every hotel's state file. The status page at / lists the
// hotels, each hotel's page under /hotels/NAME/, with the console token
// of the main configuration; a fleet of one's hotel has its page at /.
// A fleet of one ends with its hotel's failure (fleet.Fleet.Failed).
func serveFleet(ctx context.Context, f *fleet.Fleet, opts fleet.Options, hup, usr1 <-chan os.Signal) error {
	log, tel := opts.Logger, opts.Telemetry
	one := opts.Hotels.Dir == ""
	if gc, ok := fleetGC(); ok && !one {
		debug.SetGCPercent(gc)
		log.Debug(fmt.Sprintf("the Go collector runs at GOGC=%d: many hotels churn much and hold little (set GOGC or GOMEMLIMIT to choose)", gc), slog.String("op", "start"))
	}
	page, err := setupPage(ctx, opts.Source.Env, tel, log, statuspage.Options{Hotels: tel.PageHotels, One: one})
	if err != nil {
		_ = f.Stop()
		return err
	}
	if err := tel.Start(ctx, page, nil, 0, nil); err != nil {
		_ = f.Stop()
		return err
	}
	defer func() {
		if err := tel.Stop(); err != nil {
			log.Warn("stop telemetry", slog.Any("error", err))
		}
	}()
	if err := f.Reload(); err != nil {
		_ = f.Stop()
		return err
	}
	if !one { // a fleet of one says so once its hotel started
		v, _, _ := version.Get()
		log.Info("ticketbridge started", slog.String("op", "start"), slog.Any("version", v), slog.Any("hotels_dir", opts.Hotels.Dir), slog.Any("hotels", len(f.Running())), slog.Any("max_in_flight", opts.Hotels.MaxInFlight), slog.String("replica", f.Replica()))
	}
	// The hotels and the lease keepers run on goroutines of their own;
	// this one only answers the signals.
	for {
		select {
		case <-ctx.Done():
			err := f.Stop()
			log.Info("ticketbridge stopped", slog.String("op", "stop"))
			return err
		case err := <-f.Failed():
			_ = f.Stop()
			log.Info("ticketbridge stopped", slog.String("op", "stop"))
			return err
		case <-hup:
			if one {
				_ = f.Reload() // reads the secret files, and says what changed
				continue
			}
			log.Info("reloading the hotels directory", slog.String("op", "reload"), slog.Any("dir", opts.Hotels.Dir))
			if err := f.Reload(); err != nil {
				log.Error("reload failed; the hotels running go on unchanged", slog.Any("error", err), slog.String("op", "reload"))
			} else {
				log.Info("hotels directory reloaded", slog.String("op", "reload"), slog.Any("hotels", len(f.Running())))
			}
		case <-usr1:
			f.Backup(ctx)
		}
	}
}

// fleetGCPercent is the collector's target of a daemon of many hotels,
// half Go's default: its hotels' cycles make much garbage around little
// live data, and the default headroom put a daemon of 200 hotels at a peak
// of 150 MiB (126 MiB at 50, for a few percent more CPU).
const fleetGCPercent = 50

// fleetGC returns the collector's target for a daemon of many hotels; ok
// is false when the environment sets GOGC or GOMEMLIMIT, which the Go
// runtime follows instead.
func fleetGC() (int, bool) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return 0, false
	}
	return fleetGCPercent, true
}
