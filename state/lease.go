package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Leases share the hotels of one PostgreSQL database among the replicas
// (ticketbridge processes) that serve them, so that each hotel is synced
// by one replica at a time.
//
// A replica announces itself with [Leases.Heartbeat] and holds a hotel by
// a lease: a row naming the replica, valid until a time of the database's
// clock, kept alive by [Leases.Renew]. A lease whose time has passed may
// be taken by another replica ([Leases.Acquire]); each take raises the
// hotel's fence, and a Store opened with the fence it was given
// ([Options.Fence]) can commit only while the fence is current. So a
// replica that was paused, or cut off from the database, past its lease
// commits nothing after another replica took the hotel over.
//
// The holder's own view of its lease ([Lease.Valid]) ends earlier than the
// database's: it counts the time to live from the moment the renewal was
// sent, on the local monotonic clock. A holder that stops acting when its
// view ends is therefore done before anyone else may start; the fence
// covers the writes that were already on the way.
type Leases struct {
	p       *sharedPool
	replica string
	ttl     time.Duration
}

// Lease is a replica's hold on a hotel.
type Lease struct {
	Hotel string
	// Fence is the value to open the hotel's Store with.
	Fence int64
	// Until is when the holder's view of the lease ends (local clock).
	Until time.Time
}

// Valid reports whether the holder may still act for the hotel at now.
func (l Lease) Valid(now time.Time) bool { return now.Before(l.Until) }

// Owner is a hotel's lease as the database has it.
type Owner struct {
	Hotel   string
	Replica string
	Fence   int64
	// Live is false when the lease's time has passed or it was released.
	Live bool
	// Free is how long ago the lease ended (zero while it is live), by
	// the database's clock.
	Free time.Duration
}

// OpenLeases joins the replicas of the database at rawURL as replica (an
// id unique to the process), with leases that live ttl. It creates or
// migrates the schema as [Open] does. Close it when done.
func OpenLeases(ctx context.Context, rawURL, replica string, ttl time.Duration) (*Leases, error) {
	if !IsURL(rawURL) {
		return nil, fmt.Errorf("%w: leases need a PostgreSQL state (postgres://...), not a file", ErrInvalid)
	}
	if replica == "" || ttl < time.Second {
		return nil, fmt.Errorf("%w: leases need a replica id and a time to live of at least 1s (got %q, %s)", ErrInvalid, replica, ttl)
	}
	p, err := acquirePool(rawURL, true)
	if err != nil {
		return nil, fmt.Errorf("open leases %s: %w", Redacted(rawURL), err)
	}
	l := &Leases{p: p, replica: replica, ttl: ttl}
	if err := l.migrate(ctx); err != nil {
		p.release()
		return nil, fmt.Errorf("open leases %s: %w", Redacted(rawURL), hideSecret(err, p.secret))
	}
	return l, nil
}

// migrate brings the schema up to date, as a Store's open does.
func (l *Leases) migrate(ctx context.Context) (err error) {
	ctx, cancel := roundTripCtx(ctx)
	defer cancel()
	defer func() { err = ctxErr(ctx, err) }()
	tx, err := l.p.pool.BeginTx(ctx, migrateTx)
	if err != nil {
		return err
	}
	defer func() {
		// After a commit, a no-op; after ctx ended, still sent.
		rctx, cancel := rollbackCtx(ctx)
		_ = tx.Rollback(rctx)
		cancel()
	}()
	if _, err := migratePG(ctx, tx, false, pgMigrations); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// Replica returns the replica's id.
func (l *Leases) Replica() string { return l.replica }

// TTL returns the leases' time to live.
func (l *Leases) TTL() time.Duration { return l.ttl }

// exec runs fn in one round trip's time bound, redacting the password.
func (l *Leases) exec(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, min(pgRoundTripTimeout, l.ttl))
	defer cancel()
	return hideSecret(ctxErr(ctx, fn(ctx)), l.p.secret)
}

func (l *Leases) interval() string { return fmt.Sprintf("%d milliseconds", l.ttl.Milliseconds()) }

// Heartbeat keeps the replica alive for another time to live and returns
// the live replicas, sorted, this one included, and the leases of every
// hotel but those this replica holds live (Renew keeps those; at
// thousands of hotels, reading them back every tick was most of what a
// replica allocated). Replicas gone for longer than ten times to live are
// forgotten.
func (l *Leases) Heartbeat(ctx context.Context) (replicas []string, holders []Owner, err error) {
	err = l.exec(ctx, func(ctx context.Context) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO `+pgReplicaTbl+` (replica, started_at, expires_at) VALUES ($1, now(), now() + $2::interval)
			ON CONFLICT (replica) DO UPDATE SET expires_at = excluded.expires_at`, l.replica, l.interval())
		b.Queue(`DELETE FROM `+pgReplicaTbl+` WHERE expires_at < now() - 10 * $1::interval`, l.interval())
		b.Queue(`SELECT replica FROM ` + pgReplicaTbl + ` WHERE expires_at > now() ORDER BY replica`)
		b.Queue(`SELECT hotel, replica, fence, expires_at > now(), greatest(extract(epoch FROM now() - expires_at), 0)::float8
			FROM `+pgLeaseTable+` WHERE replica <> $1 OR expires_at <= now() ORDER BY hotel`, l.replica)
		br := l.p.pool.SendBatch(ctx, b)
		defer br.Close()
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if replicas, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = br.Query()
		if err != nil {
			return err
		}
		holders, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Owner, error) {
			var h Owner
			var free float64
			err := r.Scan(&h.Hotel, &h.Replica, &h.Fence, &h.Live, &free)
			h.Free = time.Duration(free * float64(time.Second))
			return h, err
		})
		if err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat: %w", err)
	}
	return replicas, holders, nil
}

// Owner returns the lease of hotel as the database has it; ok is false
// when no replica ever held it. Unlike Heartbeat it changes nothing, so a
// command that acts for one hotel from outside the daemon learns who holds
// it without being counted among the replicas the hotels are spread over.
func (l *Leases) Owner(ctx context.Context, hotel string) (h Owner, ok bool, err error) {
	err = l.exec(ctx, func(ctx context.Context) error {
		var free float64
		err := l.p.pool.QueryRow(ctx, `SELECT hotel, replica, fence, expires_at > now(), greatest(extract(epoch FROM now() - expires_at), 0)::float8
			FROM `+pgLeaseTable+` WHERE hotel = $1`, hotel).Scan(&h.Hotel, &h.Replica, &h.Fence, &h.Live, &free)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		h.Free, ok = time.Duration(free*float64(time.Second)), err == nil
		return err
	})
	if err != nil {
		return Owner{}, false, fmt.Errorf("read the lease of hotel %s: %w", hotel, err)
	}
	return h, ok, nil
}

// Acquire takes the lease of hotel when it is free, expired or already
// this replica's, raising the hotel's fence. ok is false when another
// replica holds it. It is Take of one hotel.
func (l *Leases) Acquire(ctx context.Context, hotel string) (lease Lease, ok bool, err error) {
	taken, err := l.Take(ctx, []string{hotel})
	if err != nil || len(taken) == 0 {
		return Lease{}, false, err
	}
	return taken[0], true, nil
}

// Take takes, in one statement, the leases of those of hotels that are
// free, expired or already this replica's, raising each one's fence, and
// returns them in the order of hotels; a hotel missing from the answer is
// held by another replica. A name given twice is taken once. Every name is
// checked before anything is sent: one that is not a hotel's name fails
// the whole take.
func (l *Leases) Take(ctx context.Context, hotels []string) ([]Lease, error) {
	for _, h := range hotels {
		if err := CheckHotel(h); err != nil {
			return nil, fmt.Errorf("take leases: %w: %w", ErrInvalid, err)
		}
	}
	if len(hotels) == 0 {
		return nil, nil
	}
	sent := time.Now()
	fence := make(map[string]int64, len(hotels))
	err := l.exec(ctx, func(ctx context.Context) error {
		// One statement: each lease and its hotel's fence move together.
		// The rows are locked in the hotels' order, so that two replicas
		// taking overlapping sets wait for each other instead of
		// deadlocking; a name given twice would make ON CONFLICT touch
		// its row twice, which PostgreSQL refuses.
		rows, err := l.p.pool.Query(ctx, `WITH l AS (
				INSERT INTO `+pgLeaseTable+` AS o (hotel, replica, fence, taken_at, expires_at)
				SELECT DISTINCT h, $2, 1, now(), now() + $3::interval FROM unnest($1::text[]) AS h ORDER BY h
				ON CONFLICT (hotel) DO UPDATE
				   SET replica = excluded.replica, fence = o.fence + 1, taken_at = now(), expires_at = excluded.expires_at
				 WHERE o.expires_at <= now() OR o.replica = excluded.replica
				RETURNING hotel, fence)
			INSERT INTO `+pgHotelsTable+` (hotel, created_at, fence) SELECT hotel, now(), fence FROM l ORDER BY hotel
			ON CONFLICT (hotel) DO UPDATE SET fence = excluded.fence
			RETURNING hotel, fence`, hotels, l.replica, l.interval())
		if err != nil {
			return classify(err)
		}
		var h string
		var f int64
		_, err = pgx.ForEachRow(rows, []any{&h, &f}, func() error {
			fence[h] = f
			return nil
		})
		return classify(err)
	})
	if err != nil {
		if len(hotels) == 1 {
			return nil, fmt.Errorf("take the lease of hotel %s: %w", hotels[0], err)
		}
		return nil, fmt.Errorf("take the leases of %d hotels: %w", len(hotels), err)
	}
	out := make([]Lease, 0, len(fence))
	for _, h := range hotels {
		if f, ok := fence[h]; ok {
			out = append(out, Lease{Hotel: h, Fence: f, Until: sent.Add(l.ttl)})
			delete(fence, h) // a name given twice is one lease
		}
	}
	return out, nil
}

// Renewal is what a Renew did: the leases it extended have their
// holder's view end at Until; the hotels of Lost lost theirs (taken over
// after they expired, or released), and are to stop.
type Renewal struct {
	Until time.Time
	Lost  []string
}

// Renew extends the replica's leases in one statement. The answer names
// only the leases lost, so that renewing thousands of leases that are all
// still held reads nothing back.
func (l *Leases) Renew(ctx context.Context, leases []Lease) (Renewal, error) {
	if len(leases) == 0 {
		return Renewal{}, nil
	}
	hotels := make([]string, len(leases))
	fences := make([]int64, len(leases))
	for i, le := range leases {
		hotels[i], fences[i] = le.Hotel, le.Fence
	}
	sent := time.Now()
	var lost []string
	err := l.exec(ctx, func(ctx context.Context) error {
		rows, err := l.p.pool.Query(ctx, `WITH h AS (SELECT * FROM unnest($3::text[], $4::bigint[]) AS h(hotel, fence)),
			r AS (UPDATE `+pgLeaseTable+` AS o SET expires_at = now() + $2::interval FROM h
			 WHERE o.hotel = h.hotel AND o.fence = h.fence AND o.replica = $1 AND o.expires_at > now()
			RETURNING o.hotel)
			SELECT hotel FROM h WHERE hotel NOT IN (SELECT hotel FROM r)`, l.replica, l.interval(), pgTextArray(hotels), pgInt8Array(fences))
		if err != nil {
			return err
		}
		lost, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return Renewal{}, fmt.Errorf("renew leases: %w", err)
	}
	return Renewal{Until: sent.Add(l.ttl), Lost: lost}, nil
}

// Release gives the lease back, so that another replica may take it at
// once. Releasing a lease the replica no longer holds does nothing.
func (l *Leases) Release(ctx context.Context, le Lease) error {
	err := l.exec(ctx, func(ctx context.Context) error {
		_, err := l.p.pool.Exec(ctx, `UPDATE `+pgLeaseTable+` SET expires_at = now()
			 WHERE hotel = $1 AND replica = $2 AND fence = $3 AND expires_at > now()`, le.Hotel, l.replica, le.Fence)
		return err
	})
	if err != nil {
		return fmt.Errorf("release the lease of hotel %s: %w", le.Hotel, err)
	}
	return nil
}

// Leave removes the replica from the live ones and releases every lease
// it holds: the others take its hotels at their next heartbeat instead of
// after the time to live.
func (l *Leases) Leave(ctx context.Context) error {
	err := l.exec(ctx, func(ctx context.Context) error {
		b := &pgx.Batch{}
		b.Queue(`UPDATE `+pgLeaseTable+` SET expires_at = now() WHERE replica = $1 AND expires_at > now()`, l.replica)
		b.Queue(`DELETE FROM `+pgReplicaTbl+` WHERE replica = $1`, l.replica)
		return l.p.pool.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("leave the replicas: %w", err)
	}
	return nil
}

// Quit removes the replica from the live ones when it holds no lease
// here any more, as a replica whose hotels all moved to other databases
// does: unlike Leave it releases nothing, so that the same database
// reached under another spelling of its URL keeps this replica's leases
// and heartbeat.
func (l *Leases) Quit(ctx context.Context) error {
	err := l.exec(ctx, func(ctx context.Context) error {
		_, err := l.p.pool.Exec(ctx, `DELETE FROM `+pgReplicaTbl+` WHERE replica = $1
			AND NOT EXISTS (SELECT 1 FROM `+pgLeaseTable+` WHERE replica = $1 AND expires_at > now())`, l.replica)
		return err
	})
	if err != nil {
		return fmt.Errorf("quit the replicas: %w", err)
	}
	return nil
}

// Close releases the connection pool; it does not leave (see Leave).
func (l *Leases) Close() error {
	if l.p != nil {
		l.p.release()
		l.p = nil
	}
	return nil
}
