package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	gosync "sync"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/internal/version"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// fleet runs the hotels of a hotels directory, each with its own wiring
// and scheduler in a goroutine of its own.
type fleet struct {
	// life is the daemon's context: when it ends the cycles in flight stop.
	life context.Context
	src  config.Source
	main config.Daemon
	hcfg config.Hotels
	log  *slog.Logger
	tel  *telemetry.Telemetry
	// slots bound the API and helpdesk requests in flight across hotels:
	// every hotel's chain (see newRunning) holds one per request. api is
	// the client every hotel's API client wraps.
	slots httpx.Slots
	api   *http.Client
	opts  bridge.Options
	// afterCycle, when set, is called after each cycle of each hotel.
	afterCycle func(hotel string, r sync.Report, err error)

	// wire wires a hotel: wire, or a test's.
	wire func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts bridge.Options) (*bridge.Bridge, error)

	// reloading is held by reload and stopAll, one at a time; they wait
	// for cycles with it, never with mu.
	reloading gosync.Mutex
	// mu guards what follows; it is never held while waiting for a hotel
	// or a database, so that the lease keepers, which take it to balance,
	// renew in time.
	mu     gosync.Mutex
	hotels map[string]*runningHotel
	// stopping is set by stopAll: no hotel starts any more.
	stopping bool

	// keeper holds the leases of the hotels whose state is in PostgreSQL:
	// those are leased, started here only while this replica holds their
	// lease (see leases.go). handing holds the leased hotels stopping (a
	// handover, a lease lost, a hotel that ended): their leases are
	// renewed until their wiring closed, then released.
	keeper  *leaseKeeper
	leased  map[string]config.Hotel
	handing map[string]*runningHotel
	// backoff holds the leased hotels this replica could not start, with
	// when it tries again; a reload clears it.
	backoff map[string]time.Time
	// elsewhere holds, by database, what /readyz says of the hotels other
	// replicas sync.
	elsewhere map[string]map[string]string
	// closing counts the hotels stopped in the background whose wirings
	// are not closed yet.
	closing gosync.WaitGroup
}

// runningHotel is one hotel the daemon runs.
type runningHotel struct {
	conf config.Hotel
	tel  *telemetry.Telemetry
	// stop ends the scheduling; the cycle in flight finishes first.
	stop context.CancelFunc
	// kill ends the cycle in flight too, by ending life: the hotel's lease
	// ended.
	kill context.CancelFunc
	life context.Context
	// sctx is the scheduler's context, ended by stop.
	sctx context.Context
	log  *slog.Logger
	opts bridge.Options
	// w is the hotel's wiring: set before its goroutine starts for a
	// hotel whose state is a file, by the goroutine for a leased hotel;
	// read it after wired (nil when the wiring failed).
	w *bridge.Bridge
	// wired is closed once the goroutine wired the hotel, or failed to;
	// done once the goroutine ended.
	wired chan struct{}
	done  chan struct{}
	// closed is closed once the wiring closed too, and the lease was
	// given back (see closeLater): its helpdesk's listeners and files are
	// let go.
	closed chan struct{}
	// lease is the hotel's lease; nil for a hotel whose state is a file.
	lease *hotelLease
	// page is the hotel's source of the status page (nil: none); its
	// goroutine sets it, read it after done.
	page *bridge.Console
}

// newFleet returns the fleet of the directory hcfg names; reload starts
// its hotels.
func newFleet(life context.Context, src config.Source, main config.Daemon, hcfg config.Hotels, log *slog.Logger, tel *telemetry.Telemetry, opts bridge.Options) *fleet {
	api := opts.HTTPClient
	if api == nil {
		api = bridge.NewAPIClient(hcfg.MaxInFlight)
	}
	return &fleet{life: life, src: src, main: main, hcfg: hcfg, log: log, tel: tel, slots: httpx.NewSlots(hcfg.MaxInFlight), api: api, opts: opts, wire: bridge.New,
		hotels: map[string]*runningHotel{}, keeper: newLeaseKeeper(hcfg.LeaseTTL, log),
		leased: map[string]config.Hotel{}, handing: map[string]*runningHotel{}, backoff: map[string]time.Time{},
		elsewhere: map[string]map[string]string{}}
}

// reload reads the hotels directory again and makes the running hotels
// match it: a hotel whose file is new starts, one whose file is gone
// stops after its cycle in flight, one whose file changed restarts, and
// the others are not touched. A directory that cannot be read, or that
// names a hotel badly, changes nothing and is the error returned. A hotel
// whose configuration is wrong, or that cannot start, is logged and
// reported failing by /readyz; the next reload tries it again. Leased
// hotels are started by their databases' keepers, which reload wakes; it
// waits for the cycles in flight of the hotels with a state file it
// restarts, but without the lock the keepers balance with.
func (f *fleet) reload() error {
	f.reloading.Lock()
	defer f.reloading.Unlock()
	good, bad, err := config.LoadHotelDir(f.life, f.src, f.main, f.hcfg.Dir, warnTo(f.log))
	if err != nil {
		return err
	}
	want := make(map[string]config.Hotel, len(good))
	for _, h := range good {
		want[h.Name()] = h
	}
	f.mu.Lock()
	clear(f.leased)
	clear(f.backoff) // the files may have been fixed
	for _, h := range good {
		if state.IsURL(h.Daemon.State) {
			f.leased[h.Name()] = h
			f.keeper.keeper(f, h.Daemon.State)
		}
	}
	var stopping []*runningHotel
	for name, rh := range f.hotels {
		if h, ok := want[name]; ok && h.File.Sum == rh.conf.File.Sum && rh.alive() {
			continue
		}
		if rh.lease != nil {
			// Not waited for: its keeper renews its lease until its cycle
			// ended and its wiring closed, then it gives the lease back.
			f.handOver(name, rh)
			f.log.Info("hotel stopping: its file changed or is gone", slog.Any("hotel", name), slog.String("op", "reload"))
			continue
		}
		rh.stop()
		stopping = append(stopping, rh)
		delete(f.hotels, name)
	}
	f.mu.Unlock()
	for _, rh := range stopping {
		<-rh.done
		// Off the status page before its state closes.
		f.tel.DropHotel(rh.conf.Name(), "")
		if err := rh.w.Close(); err != nil {
			f.log.Warn("close hotel", slog.Any("error", err), slog.Any("hotel", rh.conf.Name()), slog.String("op", "stop"))
		}
		if _, ok := want[rh.conf.Name()]; ok {
			f.log.Info("hotel stopped for a restart: its file changed", slog.Any("hotel", rh.conf.Name()), slog.String("op", "reload"))
		} else {
			f.log.Info("hotel stopped: its file is gone", slog.Any("hotel", rh.conf.Name()), slog.String("op", "reload"))
		}
	}
	for name, err := range bad {
		f.log.Error("hotel not started", slog.Any("error", err), slog.Any("hotel", name), slog.String("op", "reload"))
		f.tel.DropHotel(name, err.Error())
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		h := want[name]
		if state.IsURL(h.Daemon.State) {
			continue // started by its keeper, once this replica holds its lease
		}
		f.mu.Lock()
		_, ok := f.hotels[name]
		f.mu.Unlock()
		if ok {
			continue
		}
		rh, err := f.start(h)
		if err != nil {
			f.log.Error("hotel not started", slog.Any("error", err), slog.Any("hotel", name), slog.String("op", "reload"))
			f.tel.DropHotel(name, err.Error())
			continue
		}
		f.mu.Lock()
		f.hotels[name] = rh
		f.mu.Unlock()
	}
	f.keeper.wake()
	return nil
}

// alive reports whether the hotel's goroutine still runs: one that ended
// (its helpdesk belongs to another adapter's state) is started again by a
// reload.
func (rh *runningHotel) alive() bool {
	select {
	case <-rh.done:
		return false
	default:
		return true
	}
}

// newRunning prepares hotel h to run. Its API and helpdesk requests hold
// the fleet's slots. A hotel whose state is in PostgreSQL runs under hl,
// its lease: its Store commits under the lease's fence, its API and
// helpdesk requests stop when the lease's view ends (its chain's guard),
// and the end of the view stops the hotel, its wiring or its cycle in
// flight included.
func (f *fleet) newRunning(h config.Hotel, hl *hotelLease) *runningHotel {
	name := h.Name()
	log := f.log.With("hotel", name)
	tel := f.tel.Hotel(name)
	var after func(sync.Report, error)
	if f.afterCycle != nil {
		after = func(r sync.Report, err error) { f.afterCycle(name, r, err) }
	}
	opts := bridge.Options{
		Registry:   f.opts.Registry,
		HTTPClient: instrument(tel, f.api),
		Chain:      httpx.Chain{Slots: f.slots},
		AfterCycle: after,
		Hotel:      name,
	}
	life, end := context.WithCancelCause(f.life)
	kill := func() { end(errLeaseEnded) }
	if hl != nil {
		opts.Chain.Guard = leaseGuard(hl, end, errLeaseEnded)
		opts.Fence = hl.get().Fence
	}
	sctx, stop := context.WithCancel(life)
	rh := &runningHotel{conf: h, tel: tel, stop: stop, kill: kill, life: life, sctx: sctx, log: log, opts: opts,
		wired: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{}), lease: hl}
	if hl != nil {
		hl.expireWith(func() {
			log.Warn("hotel stopped: its lease was not renewed in time (the state database was out of reach, or this process was paused); another replica may take it over", slog.String("op", "lease"))
			kill()
		})
	}
	return rh
}

// start wires a hotel whose state is a file and runs it in a goroutine.
func (f *fleet) start(h config.Hotel) (*runningHotel, error) {
	rh := f.newRunning(h, nil)
	w, err := f.wire(rh.life, h.Env, h.Daemon, h.Sync, rh.log, rh.opts)
	if err != nil {
		rh.kill()
		return nil, err
	}
	rh.w = w
	go f.run(rh)
	return rh, nil
}

// run runs a hotel's scheduler, after wiring it when it is not yet (a
// leased hotel is wired here, off its keeper's goroutine).
func (f *fleet) run(rh *runningHotel) {
	defer close(rh.done)
	h, name, log, tel, sctx, life := rh.conf, rh.conf.Name(), rh.log, rh.tel, rh.sctx, rh.life
	if rh.w == nil {
		w, err := f.wire(life, h.Env, h.Daemon, h.Sync, log, rh.opts)
		if err != nil {
			close(rh.wired)
			log.Error("hotel not started; left to the other replicas for a while", slog.Any("error", err), slog.Duration("backoff", startBackoff), slog.String("op", "lease"))
			f.tel.DropHotel(name, err.Error())
			return
		}
		rh.w = w
	}
	close(rh.wired)
	w := rh.w
	// The adapter's start and the helpdesk check run here, so that a
	// slow helpdesk delays its own hotel only.
	// A hotel that cannot start is listed as failing by /readyz, and
	// no longer counts for the watchdog: the others go on, and the
	// next reload tries it again.
	if err := w.Start(sctx); err != nil {
		log.Error("hotel stopped", slog.Any("error", err), slog.String("op", "start"))
		f.tel.DropHotel(name, err.Error())
		return
	}
	if err := tel.Start(sctx, nil, w.Engine().Schedule(), w.Engine().Interval(), w.Store().Stats); err != nil {
		log.Error("hotel stopped", slog.Any("error", err), slog.String("op", "start"))
		f.tel.DropHotel(name, err.Error())
		return
	}
	// The hotel's page on the status page, fed after each of its
	// cycles as the page of a daemon of one hotel is.
	var page *bridge.Console
	if f.tel.Listens() { // the status page lists the hotels
		page = bridge.NewConsole(w, name)
		f.tel.ShowPage(name, page.Hotel)
		rh.page = page
	}
	log.Info("hotel started", slog.String("op", "start"), slog.Any("adapter", h.Daemon.Adapter), slog.String("state", state.Redacted(h.Daemon.State)), slog.Any("schedule", h.Sync.Schedule), slog.Any("api", h.Daemon.APIURL), slog.Any("file", h.File.Path))
	_ = w.Scheduler(tel, tel.CycleMax(), page, life).Run(sctx)
}

// stopAll stops every hotel, waiting for the cycles in flight, closes
// their wirings and leaves the replicas (releasing every lease, so that
// the other replicas take the hotels at once); it returns the first error
// of a close.
func (f *fleet) stopAll() error {
	f.reloading.Lock()
	defer f.reloading.Unlock()
	f.mu.Lock()
	f.stopping = true
	hotels := f.hotels
	f.hotels = map[string]*runningHotel{}
	for _, rh := range hotels {
		rh.stop()
	}
	f.mu.Unlock()
	// Waited for without mu: the keepers renew the leases meanwhile.
	var first error
	for name, rh := range hotels {
		<-rh.done
		if rh.w != nil {
			if err := rh.w.Close(); err != nil && first == nil {
				first = fmt.Errorf("close hotel %s: %w", name, err)
			}
		}
		if rh.lease != nil {
			rh.lease.stopTimer()
		}
	}
	f.closing.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), f.hcfg.LeaseTTL)
	defer cancel()
	f.keeper.leave(ctx)
	return first
}

// running returns the names of the hotels running, sorted.
func (f *fleet) running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.hotels))
	for n := range f.hotels {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// backup writes a consistent copy of each running hotel's state file next
// to it (<state>.backup), as the daemon of one hotel does on SIGUSR1.
func (f *fleet) backup(ctx context.Context) {
	f.mu.Lock()
	hs := make([]*runningHotel, 0, len(f.hotels))
	for _, rh := range f.hotels {
		hs = append(hs, rh)
	}
	f.mu.Unlock()
	for _, rh := range hs {
		dest, err := rh.w.Backup(ctx)
		if errors.Is(err, bridge.ErrBackupPostgres) {
			f.log.Error("back up state: the state is in PostgreSQL; back the database up with pg_dump, or copy a hotel into a file with ticketbridge state backup --hotel NAME FILE", slog.Any("hotel", rh.conf.Name()), slog.String("op", "backup"))
			continue
		}
		if err != nil {
			f.log.Error("back up state file", slog.Any("error", err), slog.Any("hotel", rh.conf.Name()), slog.String("op", "backup"))
			continue
		}
		f.log.Info("wrote a copy of the state file", slog.Any("hotel", rh.conf.Name()), slog.String("op", "backup"), slog.Any("path", dest))
	}
}

// serveFleet runs the hotels of the directory until ctx ends: SIGHUP (on
// hup) reloads the directory, SIGUSR1 (on usr1) backs up every hotel's
// state file. The status page at / lists the hotels, each hotel's page
// under /hotels/NAME/, with the console token of the main configuration.
func serveFleet(ctx context.Context, f *fleet, hup, usr1 <-chan os.Signal) error {
	if gc, ok := fleetGC(); ok {
		debug.SetGCPercent(gc)
		f.log.Debug(fmt.Sprintf("the Go collector runs at GOGC=%d: many hotels churn much and hold little (set GOGC or GOMEMLIMIT to choose)", gc), slog.String("op", "start"))
	}
	page, err := setupPage(ctx, f.src.Env, f.tel, f.log, statuspage.Options{Hotels: f.tel.PageHotels})
	if err != nil {
		return err
	}
	if err := f.tel.Start(ctx, page, nil, 0, nil); err != nil {
		return err
	}
	defer func() {
		if err := f.tel.Stop(); err != nil {
			f.log.Warn("stop telemetry", slog.Any("error", err))
		}
	}()
	if err := f.reload(); err != nil {
		return err
	}
	v, _, _ := version.Get()
	f.log.Info("ticketbridge started", slog.String("op", "start"), slog.Any("version", v), slog.Any("hotels_dir", f.hcfg.Dir), slog.Any("hotels", len(f.running())), slog.Any("max_in_flight", f.hcfg.MaxInFlight), slog.String("replica", f.keeper.replica))
	// The lease keepers renew and balance on goroutines of their own.
	for {
		select {
		case <-ctx.Done():
			err := f.stopAll()
			f.log.Info("ticketbridge stopped", slog.String("op", "stop"))
			return err
		case <-hup:
			f.log.Info("reloading the hotels directory", slog.String("op", "reload"), slog.Any("dir", f.hcfg.Dir))
			if err := f.reload(); err != nil {
				f.log.Error("reload failed; the hotels running go on unchanged", slog.Any("error", err), slog.String("op", "reload"))
			} else {
				f.log.Info("hotels directory reloaded", slog.String("op", "reload"), slog.Any("hotels", len(f.running())))
			}
		case <-usr1:
			f.backup(ctx)
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
