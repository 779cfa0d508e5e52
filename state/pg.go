package state

import (
	"context"
	"errors"
	"fmt"
	"net"
	gosync "sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is how many connections a process opens to one
// PostgreSQL database at most, unless the URL's pool_max_conns says
// otherwise (TICKETBRIDGE_PG_MAX_CONNS sets it): four replicas take 80 of
// PostgreSQL's default max_connections of 100, which leaves room for its
// reserved connections, `ticketbridge status` and a psql. Every hotel of
// a process shares the pool; a quiet hotel-cycle holds a connection for
// one round trip. The leases have LeaseConns more of their own.
const DefaultMaxConns = 20

// pgRoundTripTimeout bounds each exchange with PostgreSQL, so that a dead
// server or a lock held elsewhere fails an Update instead of hanging it,
// also when the caller's context has no deadline (or a later one).
const pgRoundTripTimeout = 30 * time.Second

// pgRollbackTimeout bounds the ROLLBACK of a transaction that failed. It
// is sent also after the transaction's context ended (on a context that
// keeps its values but not its end), so that the connection goes back to
// the pool clean; a server that does not answer it within this costs the
// connection, not the caller's wait.
const pgRollbackTimeout = 5 * time.Second

// pgCancelGrace is how long a round trip whose context ended waits for the
// server to answer its cancel request before the connection is given up.
const pgCancelGrace = time.Second

// roundTripCtx returns the context of one exchange of a transaction run
// under ctx: ctx, bounded by pgRoundTripTimeout.
func roundTripCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, pgRoundTripTimeout)
}

// rollbackCtx returns the context of a ROLLBACK after a transaction under ctx
// failed: not cancelled with ctx, bounded by pgRollbackTimeout.
func rollbackCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), pgRollbackTimeout)
}

// The PostgreSQL tables. Every row carries its hotel.
const (
	pgSchemaTable = "ticketbridge_schema"
	pgHotelsTable = "ticketbridge_hotels"
	pgStateTable  = "ticketbridge_state"
	pgLeaseTable  = "ticketbridge_leases"
	pgReplicaTbl  = "ticketbridge_replicas"
)

// pgBackend keeps one hotel's buckets in a PostgreSQL database. Stores of
// one process opened with the same URL share a connection pool.
type pgBackend struct {
	pool  atomic.Pointer[sharedPool] // nil once closed
	hotel string
	// fence is the hotel's lease fence this store writes under (see
	// Options.Fence); 0 writes without a lease.
	fence int64
	// wmu serialises the store's updates, as bbolt does.
	wmu gosync.Mutex
	// commits counts the updates committed, for the benchmarks.
	commits atomic.Int64
}

// sharedPool is a pgxpool shared by the stores opened with one URL.
type sharedPool struct {
	url    string
	secret string // the password, redacted from every error
	pool   *pgxpool.Pool
	refs   int
	// roundTrips counts the client's turns on the wire: each time it
	// writes after having read (see countingConn).
	roundTrips atomic.Int64
}

var (
	poolsMu gosync.Mutex
	pools   = map[string]*sharedPool{}
)

// LeaseConns is how many connections the leases of a process open to one
// PostgreSQL database, besides the stores' pool (DefaultMaxConns, or the
// URL's pool_max_conns): a pool of their own, so that a renewal never
// waits for a connection the hotels' transactions hold. Four replicas
// with both defaults take 88 of PostgreSQL's default max_connections.
const LeaseConns = 2

// acquirePool returns the process's pool for rawURL, making it on first
// use: the stores' pool, or with leases the leases' own (LeaseConns).
func acquirePool(rawURL string, leases bool) (*sharedPool, error) {
	key := rawURL
	if leases {
		key = "leases\x00" + rawURL
	}
	poolsMu.Lock()
	defer poolsMu.Unlock()
	if p, ok := pools[key]; ok {
		p.refs++
		return p, nil
	}
	cfg, err := pgxpool.ParseConfig(connString(rawURL))
	if err != nil {
		return nil, fmt.Errorf("%w: parse the PostgreSQL connection string: %w", ErrInvalid, parseURLError(rawURL, err))
	}
	if !hasSetting(rawURL, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	if leases {
		cfg.MaxConns = LeaseConns
	}
	p := &sharedPool{url: key, secret: cfg.ConnConfig.Password, refs: 1}
	dialer := &net.Dialer{KeepAlive: 5 * time.Minute}
	if d := cfg.ConnConfig.ConnectTimeout; d > 0 {
		dialer.Timeout = d
	}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, n: &p.roundTrips}, nil
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	// A round trip whose context ends asks the server to cancel the
	// statement, so that it stops waiting (on a lock, say) and the rest of
	// its pipelined batch, COMMIT included, does not run after the caller
	// was told the transaction failed. The connection's deadline follows
	// after pgCancelGrace, for a server that does not answer.
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: pgCancelGrace}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "ticketbridge"
	// Each statement travels with its arguments' types, unprepared: one
	// round trip per exchange, always (a statement cache would add a
	// prepare round trip on each connection's first use of a statement).
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeExec
	// The pool is shared by every Store of the process opened with this
	// URL and outlives the Open that made it: no caller's context is its.
	// NewWithConfig makes no connection (MinConns is zero); each
	// transaction connects under its own context.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, hideSecret(fmt.Errorf("connect to PostgreSQL: %w", err), p.secret)
	}
	p.pool = pool
	pools[key] = p
	return p, nil
}

// release drops a reference, closing the pool with the last one.
func (p *sharedPool) release() {
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p.refs--
	if p.refs == 0 {
		delete(pools, p.url)
		p.pool.Close()
	}
}

// countingConn counts round trips: a write that follows a read (or opens
// the connection) is the start of one.
type countingConn struct {
	net.Conn
	n       *atomic.Int64
	pending atomic.Bool // a write was counted and no read followed yet
}

func (c *countingConn) Write(p []byte) (int, error) {
	if !c.pending.Swap(true) {
		c.n.Add(1)
	}
	return c.Conn.Write(p)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.pending.Store(false)
	}
	return n, err
}

// openPG opens opts.Hotel's state in the database at rawURL, creating or
// migrating the schema (to len(migs)) first.
func openPG(ctx context.Context, rawURL string, opts Options, migs []pgMigration) (*Store, error) {
	s, err := newStore(Redacted(rawURL), opts)
	if err != nil {
		return nil, err
	}
	p, err := acquirePool(rawURL, false)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", s.path, err)
	}
	b := &pgBackend{hotel: s.hotel, fence: opts.Fence}
	b.pool.Store(p)
	s.pg, s.be = b, b
	if err := b.initSchema(ctx, s, migs); err != nil {
		p.release()
		return nil, fmt.Errorf("open state %s (hotel %s): %w", s.path, s.hotel, hideSecret(err, p.secret))
	}
	return s, nil
}

func (b *pgBackend) close() error {
	if p := b.pool.Swap(nil); p != nil {
		p.release()
	}
	return nil
}

// errClosed is returned by transactions on a closed store.
var errClosed = errors.New("the store is closed")

func (b *pgBackend) view(ctx context.Context, fn func(kvTx) error) error {
	return b.run(ctx, false, fn)
}

func (b *pgBackend) update(ctx context.Context, fn func(kvTx) error) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	err := b.run(ctx, true, fn)
	if err == nil {
		b.commits.Add(1)
	}
	return err
}

// run runs fn in a transaction whose every round trip uses ctx (see
// pgTx.exchange): once ctx is done, the transaction fails with ctx's error
// and is rolled back, also when fn returned nil.
func (b *pgBackend) run(ctx context.Context, rw bool, fn func(kvTx) error) (err error) {
	p := b.pool.Load()
	if p == nil {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	t := &pgTx{ctx: ctx, b: b, p: p, rw: rw}
	defer func() {
		// Also on a panic in fn, or after ctx ended: end the transaction,
		// free the connection. A connection that a cancelled round trip
		// broke is closed already; the pool drops it on Release.
		if t.conn != nil {
			if t.begun {
				rctx, cancel := rollbackCtx(ctx)
				_, _ = t.conn.Exec(rctx, "ROLLBACK")
				cancel()
			}
			t.conn.Release()
		}
	}()
	if err := fn(t); err != nil {
		return hideSecret(err, p.secret) // err itself when the password is not in it
	}
	if err := ctx.Err(); err != nil {
		return err // ctx ended while fn ran: commit nothing
	}
	if err := t.commit(); err != nil {
		return hideSecret(err, p.secret)
	}
	return nil
}
