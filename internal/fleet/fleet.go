package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/gopool"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/lease"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Options are what a Fleet runs its hotels with.
type Options struct {
	// Source and Daemon are the main configuration: every hotel's
	// defaults. Hotels is the directory's. Without a directory
	// (Hotels.Dir empty) the fleet is a fleet of one: its one hotel is the
	// main configuration, with Sync its engine's settings.
	Source config.Source
	Daemon config.Daemon
	Sync   sync.Config
	Hotels config.Hotels
	Logger *slog.Logger
	// Telemetry is the daemon's: of many hotels (telemetry.NewFleet), or
	// of a fleet of one (telemetry.NewOne).
	Telemetry *telemetry.Telemetry
	// Registry holds the adapters; nil is the daemon's.
	Registry adapters.Registry
	// HTTPClient is the client every hotel's API client wraps; nil is
	// bridge.NewAPIClient's.
	HTTPClient *http.Client
	// Slots bound the API and helpdesk requests in flight across the
	// hotels; nil is httpx.NewSlots(Hotels.MaxInFlight), or none in a
	// fleet of one.
	Slots httpx.Slots
	// AfterCycle, when set, is called after each cycle of each hotel.
	AfterCycle func(hotel string, r sync.Report, err error)
	// AfterBackup, when set, is called after each backup of each hotel.
	AfterBackup func(path string, err error)
	// Clock is the time of the leases and of the restarts' backoff; nil
	// is the system's.
	Clock lease.Clock
	// OpenLeases joins a database's replicas; nil is lease.OpenState.
	OpenLeases lease.Opener
	// Notices, when set, are told each hotel's conditions after each of
	// its cycles, and send their notices and pings until Stop.
	Notices *Notices
}

// Fleet runs the hotels of a hotels directory, each with its own wiring
// and scheduler in a goroutine of its own.
type Fleet struct {
	// life is the daemon's context: when it ends the cycles in flight stop.
	life context.Context
	src  config.Source
	main config.Daemon
	sync sync.Config
	hcfg config.Hotels
	// one is set in a fleet of one (see Options): its hotel's failure
	// (it cannot be wired or started, or it panicked) ends the daemon
	// through failed, for its service manager to restart it.
	one    bool
	failed chan error
	// started is set once a fleet of one's hotel started the first time.
	started atomic.Bool
	log     *slog.Logger
	tel     *telemetry.Telemetry
	// slots bound the API and helpdesk requests in flight across hotels:
	// every hotel's chain (see newRunning) holds one per request. api is
	// the client every hotel's API client wraps.
	slots httpx.Slots
	// imports bounds the hotels' large imports at once, their reads at
	// once as many as the requests in flight: more could not go faster,
	// and would each hold their planned reads in memory while they wait
	// (see sync.Imports).
	imports *sync.Imports
	// workers runs the hotels' cycles and their reads on goroutines kept
	// between cycles, whose stacks are grown once (see package
	// internal/gopool).
	workers  *gopool.Pool
	api      *http.Client
	registry adapters.Registry
	// afterCycle, when set, is called after each cycle of each hotel.
	afterCycle  func(hotel string, r sync.Report, err error)
	afterBackup func(path string, err error)
	clock       lease.Clock

	// wire wires a hotel: bridge.New, or a test's.
	wire func(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts bridge.Options) (*bridge.Bridge, error)

	// reloading is held by Reload and Stop, one at a time; neither waits
	// for a hotel's cycle with it, nor with mu.
	reloading gosync.Mutex
	// mu guards what follows; it is never held while waiting for a hotel
	// or a database, so that the lease keepers, which take it to balance,
	// renew in time.
	mu     gosync.Mutex
	hotels map[string]*runningHotel
	// stopping is set by Stop: no hotel starts any more.
	stopping bool

	// keeper holds the leases of the hotels whose state is in PostgreSQL:
	// those are leased, started here only while this replica holds their
	// lease (see package lease). handing holds the hotels stopping (a
	// reload, a handover, a lease lost, a hotel that ended): none starts
	// again here before its wiring closed, and a leased one's lease is
	// renewed until then, and released after.
	keeper  *lease.Keepers
	leased  map[string]config.Hotel
	handing map[string]*runningHotel
	// backoff holds the leased hotels this replica could not start, with
	// when it tries again; a reload clears it.
	backoff map[string]time.Time
	// elsewhere holds, by database, what /readyz says of the hotels other
	// replicas sync.
	elsewhere map[string]map[string]string
	// assigned holds, by database, the last share-out of its hotels over
	// its replicas: a keeper reuses it while neither changed.
	assigned map[string]assignment
	// closing counts the hotels stopped in the background whose wirings
	// are not closed yet.
	closing gosync.WaitGroup
	// standingBy is, in a fleet of one, the replica last said to hold its
	// hotel while this one stands by.
	standingBy string

	// notices are the notifications (nil: none), sending on noticeCtx
	// until Stop ends it with noticeStop and waits for noticeWG.
	notices    *Notices
	noticeCtx  context.Context
	noticeStop context.CancelFunc
	noticeWG   gosync.WaitGroup
}

// New returns the fleet of the directory opts.Hotels names; Reload starts
// its hotels, and Stop stops them. life is the daemon's: when it ends,
// the cycles in flight stop.
func New(life context.Context, opts Options) *Fleet {
	api := opts.HTTPClient
	if api == nil {
		api = bridge.NewAPIClient(opts.Hotels.MaxInFlight)
	}
	slots := opts.Slots
	if slots == nil {
		slots = httpx.NewSlots(opts.Hotels.MaxInFlight)
	}
	clock := opts.Clock
	if clock == nil {
		clock = lease.SystemClock{}
	}
	f := &Fleet{life: life, src: opts.Source, main: opts.Daemon, sync: opts.Sync, hcfg: opts.Hotels, one: opts.Hotels.Dir == "", failed: make(chan error, 1), afterBackup: opts.AfterBackup, log: opts.Logger, tel: opts.Telemetry,
		slots: slots, imports: sync.NewImports(opts.Hotels.MaxInFlight), workers: gopool.New(workerIdle), api: api, registry: opts.Registry, afterCycle: opts.AfterCycle, clock: clock, wire: bridge.New,
		hotels: map[string]*runningHotel{}, leased: map[string]config.Hotel{}, handing: map[string]*runningHotel{}, backoff: map[string]time.Time{},
		elsewhere: map[string]map[string]string{}, assigned: map[string]assignment{}, notices: opts.Notices}
	if f.notices != nil {
		f.noticeCtx, f.noticeStop = context.WithCancel(life)
		f.notices.run(f.noticeCtx, &f.noticeWG)
		if err := f.tel.Register(noticeCollector{f.notices.n}); err != nil {
			f.log.Warn("the notifications' counters are not on /metrics", slog.Any("error", err), slog.String("op", "notify"))
		}
	}
	if f.one && opts.Slots == nil {
		// What bounds a fleet's hotels together bounds nothing of one
		// hotel: its requests and large imports run as its settings say
		// (TICKETBRIDGE_CONCURRENCY), as a daemon of one hotel's always did.
		f.slots, f.imports = nil, nil
	}
	f.keeper = lease.NewKeepers(lease.Options{TTL: opts.Hotels.LeaseTTL, Logger: opts.Logger, Clock: clock, Open: opts.OpenLeases}, balancer{f})
	return f
}

// Failed returns the error that ends a fleet of one: its hotel could not
// be wired or started, or it panicked. Nothing is sent on it in a fleet
// of many, whose other hotels go on.
func (f *Fleet) Failed() <-chan error { return f.failed }

// fail ends a fleet of one with err; the first error is kept.
func (f *Fleet) fail(err error) {
	if !f.one {
		return
	}
	select {
	case f.failed <- err:
	default:
	}
}

// mainHotel is the one hotel of a fleet of one: the main configuration,
// its secret files read now. Its lease is the main configuration's hotel
// in the state database.
func (f *Fleet) mainHotel() config.Hotel {
	return config.Hotel{
		File:    config.HotelFile{Name: cmp.Or(f.main.Hotel, state.DefaultHotel)},
		Env:     f.src.Env,
		Daemon:  f.main,
		Sync:    f.sync,
		Secrets: config.ReadSecretFiles(f.src.Env, f.main.Adapter),
	}
}

// Replica returns this process's name among the replicas of a state
// database.
func (f *Fleet) Replica() string { return f.keeper.Replica() }

// Reload reads the hotels directory (in a fleet of one, the hotel's
// secret files) again and makes the running hotels match it: a hotel
// whose file is new starts, one whose file is gone stops after its cycle
// in flight, one whose file changed restarts once its wiring closed (a
// leased one by its keeper), one of whose secret files changed (its API
// key, its helpdesk's token: see config.SecretFiles) restarts once its
// wiring closed under the lease it holds (see restart), and the others
// are not touched. A directory that cannot be read, or that names a hotel
// badly, changes nothing and is the error returned. A hotel whose
// configuration is wrong, or that cannot start, is logged and reported
// failing by /readyz; the next reload tries it again. Leased hotels are
// started by their databases' keepers, which Reload wakes. Reload waits
// for no hotel's cycle: the hotels it stops close in the background.
func (f *Fleet) Reload() error {
	f.reloading.Lock()
	defer f.reloading.Unlock()
	var good []config.Hotel
	var bad map[string]error
	if f.one {
		good = []config.Hotel{f.mainHotel()}
	} else {
		var err error
		good, bad, err = config.LoadHotelDir(f.life, f.src, f.main, f.hcfg.Dir, func(s string) { f.log.Warn(s, slog.String("op", "config")) })
		if err != nil {
			return err
		}
	}
	want := make(map[string]config.Hotel, len(good))
	for _, h := range good {
		want[h.Name()] = h
	}
	f.mu.Lock()
	if f.stopping {
		f.mu.Unlock()
		return nil
	}
	clear(f.leased)
	clear(f.backoff) // the files may have been fixed
	for _, h := range good {
		if h.Daemon.State.IsDB() {
			f.leased[h.Name()] = h
			f.keeper.Keeper(f.life, h.Daemon.State.Value())
		}
	}
	var start []config.Hotel
	for name, rh := range f.hotels {
		h, ok := want[name]
		var secrets []string
		if ok {
			secrets = rh.conf.Secrets.Changed(h.Secrets)
		}
		if ok && h.File.Sum == rh.conf.File.Sum && rh.alive() {
			// Named, never shown: the files' contents stay unread here.
			switch {
			case len(secrets) > 0 && f.one:
				f.log.Info("secret files changed: the hotel is rewired with them after its cycle in flight", slog.Any("changed", secrets), slog.String("op", "reload"))
			case len(secrets) > 0:
				f.log.Info("hotel restarting: a secret file it reads changed", slog.Any("hotel", name), slog.Any("changed", secrets), slog.String("op", "reload"))
			case f.one:
				f.log.Info(unchanged(h), slog.String("op", "reload"))
			}
			if len(secrets) > 0 {
				f.restart(name, rh, h) // under its lease, not waited for
			}
			continue
		}
		// Not waited for: a leased hotel's keeper renews its lease until
		// its cycle ended and its wiring closed, then it gives the lease
		// back; a hotel whose file changed starts again after.
		f.handOver(name, rh)
		switch {
		case !ok:
			f.log.Info("hotel stopping: its file is gone", slog.Any("hotel", name), slog.String("op", "reload"))
		case h.File.Sum == rh.conf.File.Sum && len(secrets) > 0:
			// Named, never shown: the files' contents stay unread here.
			f.log.Info("hotel restarting: a secret file it reads changed", slog.Any("hotel", name), slog.Any("changed", secrets), slog.String("op", "reload"))
		case rh.lease == nil:
			f.log.Info("hotel restarting: its file changed", slog.Any("hotel", name), slog.String("op", "reload"))
		default:
			f.log.Info("hotel stopping: its file changed", slog.Any("hotel", name), slog.String("op", "reload"))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		h := want[name]
		if _, ok := f.hotels[name]; ok || h.Daemon.State.IsDB() {
			continue // leased ones start by their keeper, once this replica holds their lease
		}
		start = append(start, h)
	}
	f.mu.Unlock()
	for name, err := range bad {
		f.log.Error("hotel not started", slog.Any("error", err), slog.Any("hotel", name), slog.String("op", "reload"))
		f.tel.DropHotel(name, err.Error())
	}
	for _, h := range start {
		f.startFile(h)
	}
	f.keeper.Wake()
	return nil
}

// unchanged is what a reload of a fleet of one that changed nothing logs.
func unchanged(h config.Hotel) string {
	msg := "reload: no key or helpdesk secret file changed"
	if dir, ok := h.Env.Lookup("CREDENTIALS_DIRECTORY"); ok && dir != "" {
		// systemd copies credentials at start: a reload cannot see a
		// new key in the file the unit loads them from.
		msg += "; the credentials are copies systemd made at start: after changing the file a LoadCredential= line names, run systemctl restart ticketbridge"
	}
	return msg
}

// alive reports whether the hotel's goroutine still runs: one that ended
// (it could not start) is started again by a reload.
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
func (f *Fleet) newRunning(h config.Hotel, hl *lease.Owned) *runningHotel {
	name := h.Name()
	log, page := f.log.With("hotel", name), name
	if f.one {
		// A daemon of one hotel's lines and page name none.
		log, page = f.log, ""
	}
	tel := f.tel.Hotel(name)
	var after func(sync.Report, error)
	if f.afterCycle != nil {
		after = func(r sync.Report, err error) { f.afterCycle(name, r, err) }
	}
	api := *f.api
	api.Transport = tel.CountRequests(api.Transport)
	opts := bridge.Options{
		Registry:    f.registry,
		HTTPClient:  &api,
		Chain:       httpx.Chain{Slots: f.slots},
		Imports:     f.imports,
		Workers:     f.workers,
		AfterCycle:  after,
		AfterBackup: f.afterBackup,
		Hotel:       page,
	}
	life, end := context.WithCancelCause(f.life)
	kill := func() { end(lease.ErrEnded) }
	if hl != nil {
		opts.Chain.Guard = lease.Guard(hl, end, lease.ErrEnded)
		opts.Fence = hl.Get().Fence
	}
	sctx, stop := context.WithCancel(life)
	rh := &runningHotel{conf: h, pageName: page, tel: tel, stop: stop, kill: kill, life: life, sctx: sctx, log: log, opts: opts,
		wired: make(chan struct{}), done: make(chan struct{}), closed: make(chan struct{}), lease: hl}
	if hl != nil {
		hl.ExpireWith(func() {
			log.Warn("hotel stopped: its lease was not renewed in time (the state database was out of reach, or this process was paused); another replica may take it over", slog.String("op", "lease"))
			kill()
		})
	}
	return rh
}

// startFile starts a hotel whose state is a file, in a goroutine of its
// own that wires it once the hotel's previous run (a restart) let its
// state file and helpdesk go.
func (f *Fleet) startFile(h config.Hotel) {
	name := h.Name()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopping || f.life.Err() != nil {
		return
	}
	if _, here := f.hotels[name]; here {
		return
	}
	rh := f.newRunning(h, nil)
	if old, ok := f.handing[name]; ok {
		rh.prev = old.closed
	}
	f.hotels[name] = rh
	go f.run(rh)
}

// Stop stops every hotel, waiting for the cycles in flight, closes their
// wirings and leaves the replicas (releasing every lease, so that the
// other replicas take the hotels at once); it returns the first error of
// a close.
func (f *Fleet) Stop() error {
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
	for _, rh := range hotels {
		<-rh.done // its watcher ended with it
	}
	if f.noticeStop != nil {
		// The notices stop before the states close: a notice sent by now
		// is marked sent in its hotel's state; one not sent stays
		// pending there, for the next process to send.
		f.noticeStop()
		f.noticeWG.Wait()
	}
	for name, rh := range hotels {
		if w := rh.bridge(); w != nil {
			f.forgetNotices(name, w.Store())
			if err := w.Close(); err != nil && first == nil {
				first = fmt.Errorf("close hotel %s: %w", name, err)
			}
		}
		if rh.lease != nil {
			rh.lease.StopTimer()
		}
	}
	f.closing.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), f.hcfg.LeaseTTL)
	defer cancel()
	f.keeper.Leave(ctx)
	return first
}

// WaitClosed waits for the hotels stopped so far (by Reload, or handed
// over) to have closed their wirings and given their leases back.
func (f *Fleet) WaitClosed() { f.closing.Wait() }

// Running returns the names of the hotels running, sorted.
func (f *Fleet) Running() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.hotels))
	for n := range f.hotels {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Bridges returns the wirings of the hotels running, by name: a hotel
// not wired yet, or waiting to start again after a panic, is left out.
func (f *Fleet) Bridges() map[string]*bridge.Bridge {
	f.mu.Lock()
	hs := maps.Clone(f.hotels)
	f.mu.Unlock()
	out := make(map[string]*bridge.Bridge, len(hs))
	for name, rh := range hs {
		if w := rh.bridge(); w != nil {
			out[name] = w
		}
	}
	return out
}

// Backup writes a consistent copy of each running hotel's state file next
// to it (<state>.backup), as the daemon of one hotel does on SIGUSR1.
func (f *Fleet) Backup(ctx context.Context) {
	f.mu.Lock()
	hs := make([]*runningHotel, 0, len(f.hotels))
	for _, rh := range f.hotels {
		hs = append(hs, rh)
	}
	f.mu.Unlock()
	for _, rh := range hs {
		w := rh.bridge()
		if w == nil {
			continue // not wired yet, or waiting to restart
		}
		dest, err := w.Backup(ctx)
		if errors.Is(err, bridge.ErrBackupPostgres) {
			copyOne := "ticketbridge state backup --hotel NAME FILE"
			if f.one {
				copyOne = "ticketbridge state backup FILE"
			}
			rh.log.Error("back up state: the state is in PostgreSQL; back the database up with pg_dump, or copy a hotel into a file with "+copyOne, slog.String("op", "backup"))
			continue
		}
		if err != nil {
			rh.log.Error("back up state file", slog.Any("error", err), slog.String("op", "backup"))
			continue
		}
		rh.log.Info("wrote a copy of the state file", slog.String("op", "backup"), slog.Any("path", dest))
	}
}
