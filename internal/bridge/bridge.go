package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/email"
	"github.com/ticketbridge/ticketbridge/adapters/files"
	"github.com/ticketbridge/ticketbridge/adapters/freshdesk"
	"github.com/ticketbridge/ticketbridge/adapters/rt"
	"github.com/ticketbridge/ticketbridge/adapters/webhook"
	"github.com/ticketbridge/ticketbridge/adapters/zammad"
	"github.com/ticketbridge/ticketbridge/adapters/zendesk"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/internal/atomicfile"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/internal/gopool"
	"github.com/ticketbridge/ticketbridge/internal/httpx"
	"github.com/ticketbridge/ticketbridge/internal/statuspage"
	"github.com/ticketbridge/ticketbridge/state"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Adapters is every helpdesk adapter the daemon can run, by
// TICKETBRIDGE_ADAPTER.
func Adapters() adapters.Registry {
	return adapters.Registry{
		files.Name:     files.Factory,
		rt.Name:        rt.Factory,
		zendesk.Name:   zendesk.Factory,
		freshdesk.Name: freshdesk.Factory,
		zammad.Name:    zammad.Factory,
		webhook.Name:   webhook.Factory,
		email.Name:     email.Factory,
	}
}

// Bridge is everything a command that syncs needs, built from the
// configuration: the logger, the API client, the adapter, the state file
// and the engine. Close releases what it opened.
type Bridge struct {
	env     envconfig.Lookuper
	cfg     config.Daemon
	syncCfg sync.Config
	log     *slog.Logger
	client  *guestapi.Client
	hd      adapters.Helpdesk
	store   *state.Store // nil for a dry run
	engine  *sync.Engine // nil for a dry run
	deps    sync.Deps
	// keyPrint is the API key's fingerprint (sync.KeyFingerprint), for
	// what the hotel serves (sync.Deps.Serves).
	keyPrint string

	afterCycle  func(sync.Report, error)
	afterBackup func(path string, err error)

	// opts are the options New was given.
	opts Options
}

// Options are the parts of the wiring a command or a test replaces.
type Options struct {
	// Registry holds the adapters; nil means [Adapters].
	Registry adapters.Registry
	// HTTPClient makes the API requests, inside Chain; nil means
	// NewAPIClient's.
	HTTPClient *http.Client
	// Chain is the policy of the hotel's API and helpdesk clients: the
	// request slots of a fleet, the lease guard of a hotel held under a
	// lease. The adapter gets it through adapters.Deps: its HTTP
	// requests as Transport, its guard for what else it writes.
	Chain httpx.Chain
	// Imports bounds the large imports the hotels of a fleet run at once
	// (see sync.Imports); nil for one hotel.
	Imports *sync.Imports
	// Workers runs the cycles' goroutines of the hotels of a fleet on
	// goroutines kept between cycles (see package internal/gopool); nil
	// for one hotel.
	Workers *gopool.Pool
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
	// Store, when set, is the hotel's state already open: the one its
	// previous run handed over (see Bridge.CloseKeepStore) when it
	// restarted under the same lease, so that the state file's lock is
	// never let go for a command to take. The Bridge owns it from then
	// on: New closes it on error, and Close closes it.
	Store *state.Store
}

// NewAPIClient returns an HTTP client with the timeouts guestapi's
// default client has, keeping up to idle connections per host.
func NewAPIClient(idle int) *http.Client {
	return httpx.NewClient(guestapi.DefaultRequestTimeout, idle)
}

// New builds the engine from the configuration. On error everything it
// opened is closed again.
func New(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, sc sync.Config, log *slog.Logger, opts Options) (_ *Bridge, err error) {
	// A store handed over is the Bridge's from the start: closed on any
	// error below.
	w := &Bridge{env: env, cfg: cfg, syncCfg: sc, log: log, afterCycle: opts.AfterCycle, afterBackup: opts.AfterBackup, opts: opts, store: opts.Store}
	w.opts.Store = nil // w.store from now on
	defer func() {
		if err != nil {
			w.Close()
		}
	}()
	if err := config.CheckAPIURL(cfg.APIURL, cfg.AllowInsecureHTTP); err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	if w.client, err = w.newClient(); err != nil {
		return nil, err
	}
	if w.store == nil && !opts.DryRun {
		w.store, err = openState(ctx, cfg, log, opts.Fence)
		if err != nil {
			return nil, err
		}
	}
	if w.hd, err = w.openHelpdesk(ctx); err != nil {
		return nil, err
	}
	w.deps = w.depsOf(w.client, w.hd)
	if w.store != nil {
		w.engine, err = sync.New(sc, w.deps)
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// newClient makes the hotel's API client with the key it reads now.
func (w *Bridge) newClient() (*guestapi.Client, error) {
	cfg, env := w.cfg, w.env
	key, err := cfg.ReadAPIKey(env)
	if err != nil {
		return nil, err
	}
	w.keyPrint = sync.KeyFingerprint(key)
	api := w.opts.HTTPClient
	if api == nil {
		api = NewAPIClient(4)
	}
	c, err := guestapi.New(guestapi.Config{
		BaseURL: cfg.APIURL,
		APIKey:  key,
		// A key rotated in its file is taken at the first 401, without a
		// restart (under systemd the credential is a copy made at start:
		// there a restart takes it).
		Rekey:      func() (string, error) { return cfg.ReadAPIKey(env) },
		HTTPClient: w.opts.Chain.Client(api),
		Logger:     w.log, // the client names each request's op itself
	})
	if err != nil {
		return nil, fmt.Errorf("read configuration: TICKETBRIDGE_API_URL or the API key: %w", err)
	}
	return c, nil
}

// openHelpdesk opens the hotel's adapter with the secrets it reads now.
func (w *Bridge) openHelpdesk(ctx context.Context) (adapters.Helpdesk, error) {
	cfg := w.cfg
	reg := w.opts.Registry
	if reg == nil {
		reg = Adapters()
	}
	hd, err := reg.Open(ctx, cfg.Adapter, adapters.Deps{
		Env: w.env, Logger: w.log.With("adapter", cfg.Adapter), StatusToHelpdesk: cfg.StatusToHelpdesk, StatusFromHelpdesk: cfg.StatusFromHelpdesk, ReadOnly: w.opts.DryRun,
		StateDir: cfg.StateDir(), Transport: w.opts.Chain.Transport(nil), Guard: w.opts.Chain.Guard,
	})
	if err != nil {
		if errors.Is(err, adapters.ErrUnknownAdapter) {
			return nil, fmt.Errorf("read configuration: TICKETBRIDGE_ADAPTER=%q: %w", cfg.Adapter, err)
		}
		return nil, err
	}
	return hd, nil
}

// depsOf returns the engine's dependencies with client and hd.
func (w *Bridge) depsOf(client *guestapi.Client, hd adapters.Helpdesk) sync.Deps {
	serves := sync.ServesOf(w.cfg.APIURL, w.keyPrint, hd)
	return sync.Deps{API: client, Helpdesk: hd, Store: w.store, Logger: w.log.With("adapter", w.cfg.Adapter), Imports: w.opts.Imports, Workers: w.opts.Workers,
		Advise: func(err error) error { return config.WithFix(err, w.cfg, w.env, config.CurrentAccount()) }, Serves: &serves}
}

// Serves returns what the hotel serves: the API, the key's fingerprint,
// the helpdesk. The engine holds a state synced with another
// (sync.ErrMoved); confirm-move and hotels adopt record it.
func (w *Bridge) Serves() sync.Serves {
	return sync.ServesOf(w.cfg.APIURL, w.keyPrint, w.hd)
}

// openState opens the state file for writing, explaining a lock held by a
// running daemon.
func openState(ctx context.Context, cfg config.Daemon, log *slog.Logger, fence int64) (*state.Store, error) {
	st, err := state.OpenAt(ctx, cfg.State, state.Options{Logger: log, Hotel: cfg.Hotel, Fence: fence})
	if errors.Is(err, state.ErrLocked) {
		return nil, fmt.Errorf("%w\nis the daemon running? `ticketbridge status` works alongside it; stop it (systemctl stop ticketbridge) to run this command", err)
	}
	return st, err
}

// Close closes the adapter and the state file and returns the first error.
func (w *Bridge) Close() error {
	var errs []error
	w.flush("stop")
	hd := w.hd
	w.hd = nil
	if hd != nil {
		errs = append(errs, hd.Close())
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

// CloseKeepStore closes the adapter as Close does, and returns the state
// open, for the hotel's next run to take (Options.Store); nil when the
// Bridge has none.
func (w *Bridge) CloseKeepStore() (*state.Store, error) {
	w.flush("restart")
	st := w.store
	w.store = nil
	hd := w.hd
	w.hd = nil
	if hd != nil {
		return st, hd.Close()
	}
	return st, nil
}

// flush stores the next reads the engine keeps in memory (sync.Engine.Flush),
// before the engine is let go (op names why, for the log). A failure
// costs only a read of those tickets in the next cycle, and is logged.
// The write is bounded by the state's own round-trip timeout.
func (w *Bridge) flush(op string) {
	eng := w.Engine()
	if eng == nil || w.store == nil {
		return
	}
	if err := eng.Flush(context.Background()); err != nil {
		w.log.Info("the next reads of quiet tickets were not stored: the next cycle reads them again", slog.Any("error", err), slog.String("op", op))
	}
}

// Files the daemon keeps next to the state file.
const (
	// StatusSuffix names the status snapshot the daemon writes after each
	// cycle, for `ticketbridge status` while the daemon holds the state.
	StatusSuffix = ".status.json"
	// snapshotEvery is the longest time between two status snapshots after
	// cycles that changed something, when taking one is slow (see
	// snapshotTimer).
	snapshotEvery = 10 * time.Second
	// snapshotQuietEvery is how often the status snapshot is taken while
	// the cycles change nothing: it reads every record, which a quiet
	// cycle does not need, and only its times would differ.
	snapshotQuietEvery = time.Minute
	// snapshotLeanQuietEvery is snapshotQuietEvery for a hotel that keeps
	// no request lines in memory (see snapshotTimer.lean) and writes a
	// file: its quiet snapshot is read from state again, not restamped.
	snapshotLeanQuietEvery = 5 * time.Minute
	// BackupSuffix names the live copy the daemon writes on SIGUSR1.
	BackupSuffix = ".backup"
)

// Start starts the adapter's listeners and goroutines (only the daemon
// does; the adapter's Close, in w.Close, stops them) and checks the
// helpdesk: a state file of another adapter is an error, a helpdesk that
// does not answer is logged and tried again by the first cycle, and a
// state synced with another API or helpdesk (sync.ErrMoved) is logged:
// the hotel is held, each cycle failing with what changed, until the
// move is confirmed.
func (w *Bridge) Start(ctx context.Context) error {
	if st, ok := w.Helpdesk().(adapters.Starter); ok {
		if err := st.Start(ctx); err != nil {
			return err
		}
	}
	if err := w.Engine().Check(ctx); errors.Is(err, sync.ErrAdapterMismatch) {
		return err
	} else if errors.Is(err, sync.ErrMoved) {
		// Held, not stopped: every cycle says so (status, the page, the
		// log) until the move is confirmed.
		w.log.Error("the hotel is held: it writes nothing upstream nor to the helpdesk until the move is confirmed", slog.String("op", "start"), slog.Any("error", err))
	} else if err != nil {
		w.log.Warn("the helpdesk check failed; the first cycle tries again", slog.String("op", "start"), slog.Any("error", err))
	}
	return nil
}

// Reporter is told of each cycle of a hotel: the telemetry.
type Reporter interface {
	CycleStarted()
	CycleDone(r sync.Report, err error)
	// ObserveHeld is given, after each cycle, the changes the helpdesk
	// holds and how many files the adapter set aside so far.
	ObserveHeld(held []adapters.HeldError, setAside uint64)
}

// Scheduler returns the scheduler of w's engine, each cycle bound by
// deadline, reporting each cycle to rep and to the status page (nil:
// none), and writing the status snapshot after it. life is the context
// the cycles run in, not the scheduler's: ending the scheduler's lets the
// cycle in flight finish.
func (w *Bridge) Scheduler(rep Reporter, deadline time.Duration, page *Console, life context.Context) *sync.Scheduler {
	timer := snapshotTimer{lean: page.lean(), file: !w.cfg.State.IsDB()}
	return &sync.Scheduler{
		Schedule: w.Engine().Schedule(),
		Deadline: deadline,
		Workers:  w.opts.Workers,
		Cycle: func(ctx context.Context) (sync.Report, error) {
			// The scheduler's deadline, on the context the cycle runs in.
			ctx, cancel := context.WithDeadlineCause(life, deadlineOf(ctx), sync.ErrCycleDeadline)
			defer cancel()
			rep.CycleStarted()
			return w.Engine().RunCycle(ctx)
		},
		AfterCycle: func(r sync.Report, err error) {
			rep.CycleDone(r, err)
			// The page keeps the last snapshot between two, and is given
			// each cycle's report.
			var snap *sync.Status
			if now, commits := time.Now(), w.store.Commits(); timer.due(now, r, commits) {
				if prev := timer.reuse(r, commits); prev != nil {
					// Nothing committed since the last read: only its
					// times and the last cycle differ.
					s := *prev
					s.At = now
					snap = w.snapshotOf(&s, &r)
				} else {
					// The hook is given no context: the snapshot's read is
					// bounded by the state's round-trip timeout.
					snap = w.snapshotAfter(context.Background(), &r)
					timer.cost = time.Since(now)
				}
				timer.taken(now, commits, snap)
			}
			ReportHeld(context.Background(), rep, w.Helpdesk())
			page.cycleDone(r, snap)
			if w.afterCycle != nil {
				w.afterCycle(r, err)
			}
		},
		Logger: w.log,
	}
}

// deadlineOf returns ctx's deadline, or a time far ahead when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if dl, ok := ctx.Deadline(); ok {
		return dl
	}
	return time.Now().Add(100 * 365 * 24 * time.Hour)
}

// snapshotTimer decides after which cycles the status snapshot is taken.
// Taking it reads every record. It is taken after every cycle that did
// not sync; after one that changed the state (the store committed since
// the last snapshot) when the last is older than twenty times what taking
// it cost, at most snapshotEvery; and after a quiet one only when the last
// is older than snapshotQuietEvery (snapshotLeanQuietEvery for a lean
// hotel that writes a file).
type snapshotTimer struct {
	last    time.Time     // when the last snapshot was taken; zero: none yet
	cost    time.Duration // what reading the last one from state cost
	commits int64         // the store's commits when it was taken
	// prev is the last snapshot (nil: none, or it could not be read); a
	// quiet cycle's is prev restamped, not read from state again.
	prev *sync.Status
	// lean is set for a hotel whose page keeps no request lines (a hotel
	// of many, or no page): prev keeps the counts only, about 400 bytes
	// a request less. A quiet snapshot that writes a file (file) is then
	// read from state again; one that does not (PostgreSQL) needs only
	// the counts the page shows.
	lean, file bool
}

// due reports whether the snapshot is to be taken now, after the cycle
// of report r, the store having committed commits writes since it opened.
func (t *snapshotTimer) due(now time.Time, r sync.Report, commits int64) bool {
	since := now.Sub(t.last)
	switch {
	case t.last.IsZero() || !r.Synced:
		return true
	case commits != t.commits:
		return since >= min(snapshotEvery, 20*t.cost)
	case t.lean && t.file:
		return since >= snapshotLeanQuietEvery
	default:
		return since >= snapshotQuietEvery
	}
}

// reuse returns the last snapshot when the next, after the cycle of
// report r with the store at commits, may be that one restamped: the
// cycle synced, the state committed nothing since it was read, and the
// snapshot kept what the next one needs. Else nil: the state is read
// again.
func (t *snapshotTimer) reuse(r sync.Report, commits int64) *sync.Status {
	if t.prev == nil || commits != t.commits || !r.Synced || (t.lean && t.file) {
		return nil
	}
	return t.prev
}

// taken records snapshot s, taken at now with the store at commits; a
// lean timer keeps it without its lists.
func (t *snapshotTimer) taken(now time.Time, commits int64, s *sync.Status) {
	if s != nil && t.lean {
		c := *s
		c.Tickets, c.Pending, c.Failed = nil, nil, nil
		s = &c
	}
	t.last, t.commits, t.prev = now, commits, s
}

// WriteSnapshot writes the status snapshot of w's hotel next to its state
// file (see snapshot) and returns it, nil when it could not be read. It
// is written also when ctx has ended (once after Ctrl-C: the snapshot
// then shows the interrupted cycle): its read of the state outlives
// ctx's end by at most snapshotGrace.
func (w *Bridge) WriteSnapshot(ctx context.Context) *sync.Status {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(snapshotGrace, cancel)
		<-rctx.Done()
		t.Stop()
	})
	defer stop()
	return snapshot(rctx, w.store, w.Helpdesk(), snapshotPath(w.cfg.State), nil, w.log)
}

// snapshotGrace is how long WriteSnapshot's read of the state outlives
// its context: a database that does not answer costs the snapshot, not a
// stopping command's wait.
const snapshotGrace = 5 * time.Second

// ReadSnapshot reads the status snapshot the daemon wrote at path (the
// state file's path and StatusSuffix). Its errors finish a sentence about
// the daemon ("the daemon has written no status snapshot yet"), as status
// prints them.
func ReadSnapshot(path string) (sync.Status, error) {
	var s sync.Status
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, errors.New("has written no status snapshot yet; wait for its first cycle")
	}
	if err != nil {
		return s, fmt.Errorf("its status snapshot cannot be read: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("its status snapshot %s is damaged: %w", path, err)
	}
	return s, nil
}

// ReadHeld returns what the helpdesk of cfg's hotel holds until its team
// acts (see adapters.Holder), for `ticketbridge status` reading the state
// itself (the daemon stopped, or the state in PostgreSQL), and when that
// was seen. The files adapter's files set aside are read from its folder
// now, writing nothing (seen is zero). The other adapters know what their
// helpdesk holds only while they run: theirs is the list of the last
// status snapshot, seen at its time; none when there is no snapshot (no
// cycle ran, or the state is in PostgreSQL) or it is of another adapter.
func ReadHeld(ctx context.Context, env envconfig.Lookuper, cfg config.Daemon, log *slog.Logger) (held []adapters.HeldError, seen time.Time, err error) {
	if cfg.Adapter == files.Name {
		c, err := files.LoadConfig(ctx, env)
		if err != nil {
			return nil, time.Time{}, err
		}
		a, err := files.New(ctx, files.Options{Dir: c.Dir, ReadOnly: true, Logger: log})
		if err != nil {
			return nil, time.Time{}, err
		}
		defer a.Close()
		return a.Held(ctx), time.Time{}, nil
	}
	if cfg.State.IsDB() {
		return nil, time.Time{}, nil
	}
	path := cfg.State.Value() + StatusSuffix
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, time.Time{}, nil
	}
	s, err := ReadSnapshot(path)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list what the helpdesk held: %w", err)
	}
	if s.Adapter != cfg.Adapter || len(s.Held) == 0 {
		return nil, time.Time{}, nil
	}
	return s.Held, s.At, nil
}

// snapshotAfter is WriteSnapshot after the cycle of report r, which the
// snapshot shows as the last cycle: a quiet cycle does not always store
// its record (see sync's quietRecordEvery).
func (w *Bridge) snapshotAfter(ctx context.Context, r *sync.Report) *sync.Status {
	return snapshot(ctx, w.store, w.Helpdesk(), snapshotPath(w.cfg.State), r, w.log)
}

// snapshotOf writes s, the last snapshot restamped, as the snapshot after
// the cycle of report r (see snapshot), reading nothing of the state.
func (w *Bridge) snapshotOf(s *sync.Status, r *sync.Report) *sync.Status {
	return writeSnapshot(*s, nil, w.Helpdesk(), snapshotPath(w.cfg.State), r, w.log)
}

// snapshot writes the status snapshot of st to path, atomically and
// readable by the owner only, with last (when not nil) as its last cycle.
// Failures are logged: the snapshot is a convenience, the state file is
// the truth. With the state in PostgreSQL no file is written (status
// reads the database). It returns the snapshot, nil when it could not be
// read.
func snapshot(ctx context.Context, st *state.Store, hd adapters.Helpdesk, path string, last *sync.Report, log *slog.Logger) *sync.Status {
	s, err := sync.ReadStatus(ctx, st, time.Now())
	return writeSnapshot(s, err, hd, path, last, log)
}

// snapshotPath is the status snapshot's file next to the state file at l;
// "" for a state in PostgreSQL, which has none.
func snapshotPath(l state.Location) string {
	if l.IsDB() {
		return ""
	}
	return l.Value() + StatusSuffix
}

// writeSnapshot completes s, read with err, and writes it as snapshot
// does, to path unless it is "".
func writeSnapshot(s sync.Status, err error, hd adapters.Helpdesk, path string, last *sync.Report, log *slog.Logger) *sync.Status {
	if err == nil {
		s.Held = held(context.Background(), hd)
		if last != nil && last.Outcome != "" {
			s.LastCycle = last
			if last.Synced {
				s.LastSuccess = last.Start.Add(last.Duration)
			}
		}
	}
	if err == nil && path != "" {
		var b []byte
		// Compact: indenting it doubled what writing it cost, for a
		// file read by the status command, not by eye.
		if b, err = json.Marshal(s); err == nil {
			// No fsync: the daemon writes it again after a restart.
			err = atomicfile.WriteVolatile(path, append(b, '\n'), 0o600)
		}
	}
	if err != nil {
		log.Warn("write status snapshot", slog.Any("error", err), slog.String("op", "status"), slog.Any("path", state.Redacted(path)))
	}
	if s.At.IsZero() {
		return nil
	}
	return &s
}

// held returns the changes the helpdesk holds until its team acts, when the
// adapter can tell (adapters.Holder).
func held(ctx context.Context, hd adapters.Helpdesk) []adapters.HeldError {
	if h, ok := hd.(adapters.Holder); ok {
		return h.Held(ctx)
	}
	return nil
}

// Closed reports whether Close released everything w opened.
func (w *Bridge) Closed() bool { return w.Helpdesk() == nil && w.store == nil }

// Console is the daemon's status page; a nil *console (no listener) does
// nothing.
type Console struct {
	Hotel *statuspage.Hotel
}

// NewConsole returns the page's source of w's hotel, named name ("" for
// a daemon's one hotel), with the status read from its state. A hotel of
// many ("" excepted) keeps only counts in memory and reads its request
// list when its pages are viewed (statuspage.Hotel.OnDemand).
func NewConsole(w *Bridge, name string) *Console {
	h := statuspage.NewHotel(name, w.store)
	if l, ok := w.Helpdesk().(adapters.TicketLinker); ok {
		// The adapter as opened: TicketURL reads its settings only, so
		// that a view after the bridge closed still links.
		h.WithTicketURL(func(ref string) string { return l.TicketURL(adapters.Ref(ref)) })
	}
	if name != "" {
		h.OnDemand()
	}
	if err := h.Refresh(); err != nil {
		w.log.Warn("read status for the status page", slog.Any("error", err), slog.String("op", "console"))
	}
	return &Console{Hotel: h}
}

// lean reports whether the page keeps no request lines in memory: there
// is none, or it reads them on demand.
func (c *Console) lean() bool { return c == nil || c.Hotel.IsOnDemand() }

// cycleDone gives the page the cycle's report and the status read after
// it, nil when the daemon read none this time.
func (c *Console) cycleDone(r sync.Report, s *sync.Status) {
	if c == nil {
		return
	}
	if s == nil {
		c.Hotel.CycleReported(r) // the daemon read no status this time
		return
	}
	_ = c.Hotel.CycleDone(r, s)
}

// ErrBackupPostgres is returned by backup when the state is in PostgreSQL:
// the database is backed up with its own tools.
var ErrBackupPostgres = errors.New("back up state: the state is in PostgreSQL")

// Backup writes a consistent copy of w's state file next to it (the state
// file's name and backupSuffix) and returns the copy's path; the
// AfterBackup option is called after it.
func (w *Bridge) Backup(ctx context.Context) (string, error) {
	if w.cfg.State.IsDB() {
		return "", ErrBackupPostgres
	}
	dest := w.cfg.State.Value() + BackupSuffix
	err := w.store.BackupFile(ctx, dest)
	if w.afterBackup != nil {
		w.afterBackup(dest, err)
	}
	return dest, err
}

// ReportHeld tells rep what the helpdesk hd holds until its team acts and
// how many files it set aside, when the adapter can tell.
func ReportHeld(ctx context.Context, rep Reporter, hd adapters.Helpdesk) {
	rep.ObserveHeld(held(ctx, hd), setAside(hd))
}

// setAside returns how many files the adapter set aside since it was
// made, when it sets files aside (adapters.SetAsideCounter).
func setAside(hd adapters.Helpdesk) uint64 {
	if c, ok := hd.(adapters.SetAsideCounter); ok {
		return c.SetAside()
	}
	return 0
}

// Daemon is the hotel's daemon-level configuration.
func (w *Bridge) Daemon() config.Daemon { return w.cfg }

// API is the hotel's API client.
func (w *Bridge) API() *guestapi.Client { return w.client }

// Helpdesk is the hotel's helpdesk adapter; nil once closed.
func (w *Bridge) Helpdesk() adapters.Helpdesk { return w.hd }

// Store is the hotel's state; nil for a dry run and once closed.
func (w *Bridge) Store() *state.Store { return w.store }

// Engine is the hotel's engine; nil for a dry run.
func (w *Bridge) Engine() *sync.Engine { return w.engine }
