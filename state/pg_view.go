package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	gosync "sync"

	"github.com/jackc/pgx/v5"
)

// errOutsideWorkingSet is the error of a read, in a working-set view (see
// [Store.ViewWorkingSet]), of something the working set does not hold.
var errOutsideWorkingSet = errors.New("read outside the working set of a working-set view")

// workingSet is what [Store.ViewWorkingSet] reads: buckets whole, and the
// journal entries the index buckets point to.
var (
	workingSetBuckets = []string{bucketMeta, bucketTickets, bucketCursors, bucketJournalPending, bucketJournalUnmarked}
	workingSetIndexes = []string{bucketJournalPending, bucketJournalUnmarked}
	// workingSetWhole is the set of workingSetBuckets, which every view
	// shares and none changes.
	workingSetWhole = func() map[string]bool {
		m := map[string]bool{}
		for _, name := range workingSetBuckets {
			m[name] = true
		}
		return m
	}()
)

// viewWorkingSet runs fn in a view whose reads are all answered from the
// working set, read in one statement before fn runs: one round trip, with
// no BEGIN and no COMMIT (a single statement sees one snapshot).
// Once ctx is done it fails with ctx's error, also when fn returned nil.
func (b *pgBackend) viewWorkingSet(ctx context.Context, fn func(kvTx) error) error {
	p := b.pool.Load()
	if p == nil {
		return errClosed
	}
	t := &pgTx{ctx: ctx, b: b, p: p, whole: workingSetWhole}
	wb := workingSetBuffers.Get().(*wsBuffers)
	defer wb.release()
	if err := t.readWorkingSet(wb); err != nil {
		return hideSecret(err, p.secret)
	}
	if err := fn(t); err != nil {
		return hideSecret(err, p.secret)
	}
	return ctx.Err()
}

// wsBuffers is what a working-set view reads into. The views of every
// store of the process share them through workingSetBuffers: the bytes
// are about a kilobyte a ticket, the larger part of what a quiet cycle
// on PostgreSQL allocated, and the collector paid for them again. No
// value outlives its view: kvTx's values are valid only until the
// transaction ends, as bbolt's are.
type wsBuffers struct {
	buf  []byte
	rows []wsRow
	// kvs holds the rows in order of bucket and key, and ws each
	// bucket's run of it (pgTx.ws).
	kvs []pgKV
	ws  map[string][]pgKV
}

// wsRow is one row read, its key and value as offsets into buf.
type wsRow struct {
	bucket         string
	k0, k1, v0, v1 int
	absent         bool
}

var workingSetBuffers = gosync.Pool{New: func() any {
	return &wsBuffers{buf: make([]byte, 0, 64<<10), ws: make(map[string][]pgKV, len(workingSetBuckets)+1)}
}}

// wsKeepMax is the largest buffer given back for the next view: a hotel
// of 10,000 requests reads some 10 MB, which the views of small hotels
// would otherwise hold until the collector drops it.
const wsKeepMax = 1 << 20

// release zeroes the bytes read and gives wb back for the next view, of
// this hotel or another. The zeroes are no guard: a value kept past its
// view by mistake reads as zeros only until the next view takes the
// buffer, and then as that view's bytes. The guard is kvTx's contract,
// which every reader in this package keeps by decoding or copying at
// once; the zeroes let a test see a value kept (see
// TestWorkingSetValueKeptPastItsView).
func (wb *wsBuffers) release() {
	clear(wb.buf)
	if cap(wb.buf) > wsKeepMax {
		return
	}
	clear(wb.ws)
	wb.buf, wb.rows, wb.kvs = wb.buf[:0], wb.rows[:0], wb.kvs[:0]
	workingSetBuffers.Put(wb)
}

// workingSetSQL reads a hotel's working set: the buckets held whole, and
// under the journal bucket the entries the index buckets point to (an
// index pointing nowhere comes back with found false). The bucket names
// are part of the statement, so that its one parameter is the hotel.
var workingSetSQL = `SELECT bucket, key, value, true FROM ` + pgStateTable + `
		WHERE hotel = $1 AND bucket IN (` + sqlStrings(workingSetBuckets...) + `)
	UNION ALL
	SELECT ` + sqlStrings(bucketJournal) + `, i.value, j.value, j.key IS NOT NULL FROM ` + pgStateTable + ` i
		LEFT JOIN ` + pgStateTable + ` j ON j.hotel = i.hotel AND j.bucket = ` + sqlStrings(bucketJournal) + ` AND j.key = i.value
		WHERE i.hotel = $1 AND i.bucket IN (` + sqlStrings(workingSetIndexes...) + `)`

// sqlStrings returns names as a list of SQL string literals. The names are
// the package's own bucket names, which hold no quote.
func sqlStrings(names ...string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return strings.Join(quoted, ", ")
}

// pgKV is a key and its value, as a working-set view holds them.
type pgKV struct{ k, v []byte }

// readWorkingSet reads the working set into t.ws, in one statement and
// one round trip.
//
// It asks below pgx's rows, for every column in binary. pgx asks for text
// unless it knows the statement's result types, which costs a round trip
// of its own (a prepare, or a describe on each connection), and bytea's
// text is hex: twice the bytes, to encode, send and decode. At thousands
// of hotels that decoding and the allocation of each row were the larger
// part of a quiet cycle's CPU on PostgreSQL. The keys and values are
// copied into wb's buffer, which views share, instead of two allocations
// a row.
func (t *pgTx) readWorkingSet(wb *wsBuffers) error {
	ctx, cancel := roundTripCtx(t.ctx)
	defer cancel()
	fail := func(err error) error {
		return classify(fmt.Errorf("read the working set: %w", ctxErr(ctx, err)))
	}
	c, err := t.p.pool.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	defer c.Release()
	rr := c.Conn().PgConn().ExecParams(ctx, workingSetSQL, [][]byte{[]byte(t.b.hotel)}, nil, nil, []int16{pgx.BinaryFormatCode})
	// buf is never nil, so that an empty value is there, unlike a missing
	// one.
	rows, buf := wb.rows[:0], wb.buf[:0]
	defer func() { wb.rows, wb.buf = rows, buf }()
	for rr.NextRow() {
		v := rr.Values()
		if len(v) != 4 || v[1] == nil || len(v[3]) != 1 {
			rr.Close()
			return fail(fmt.Errorf("a row not of the shape asked for (%d columns, a key and a found flag)", len(v)))
		}
		r := wsRow{bucket: workingSetBucket(v[0]), absent: v[3][0] == 0}
		if r.bucket == "" {
			rr.Close()
			return fail(fmt.Errorf("a row of bucket %q, which the statement does not read", v[0]))
		}
		r.k0 = len(buf)
		buf = append(buf, v[1]...)
		r.k1, r.v0 = len(buf), len(buf)
		buf = append(buf, v[2]...)
		r.v1 = len(buf)
		rows = append(rows, r)
	}
	if _, err := rr.Close(); err != nil {
		return fail(err)
	}
	// In order of bucket and key, each bucket a run of wb.kvs.
	slices.SortFunc(rows, func(a, b wsRow) int {
		if c := strings.Compare(a.bucket, b.bucket); c != 0 {
			return c
		}
		return bytes.Compare(buf[a.k0:a.k1], buf[b.k0:b.k1])
	})
	kvs, start := wb.kvs[:0], 0
	for i, r := range rows {
		kv := pgKV{k: buf[r.k0:r.k1:r.k1], v: buf[r.v0:r.v1:r.v1]}
		if r.absent {
			kv.v = nil // an index pointing nowhere: absent
		}
		kvs = append(kvs, kv)
		if i == len(rows)-1 || rows[i+1].bucket != r.bucket {
			wb.ws[r.bucket] = kvs[start:len(kvs):len(kvs)]
			start = len(kvs)
		}
	}
	wb.kvs, t.ws = kvs, wb.ws
	return nil
}

// workingSetBucket returns the bucket named name among those the working
// set's statement reads, "" for any other.
func workingSetBucket(name []byte) string {
	for _, b := range workingSetBuckets {
		if string(name) == b {
			return b
		}
	}
	if string(name) == bucketJournal {
		return bucketJournal
	}
	return ""
}

// fromWorkingSet answers a read of a working-set view: ok is false when t
// is no such view. A key of a bucket held whole that is not there is
// absent; any other key not read is an error.
func (t *pgTx) fromWorkingSet(bucket string, key []byte) (val []byte, ok bool, err error) {
	if t.whole == nil {
		return nil, false, nil
	}
	kvs := t.ws[bucket]
	if i, found := slices.BinarySearchFunc(kvs, key, func(e pgKV, k []byte) int { return bytes.Compare(e.k, k) }); found {
		return kvs[i].v, true, nil
	}
	if t.whole[bucket] {
		return nil, true, nil
	}
	return nil, true, fmt.Errorf("%w: %s/%q", errOutsideWorkingSet, bucket, key)
}

// scanWorkingSet is scan in a working-set view.
func (t *pgTx) scanWorkingSet(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	if !t.whole[bucket] {
		return fmt.Errorf("%w: bucket %s", errOutsideWorkingSet, bucket)
	}
	kvs := t.ws[bucket]
	i, _ := slices.BinarySearchFunc(kvs, prefix, func(e pgKV, k []byte) int { return bytes.Compare(e.k, k) })
	for _, e := range kvs[i:] {
		if !bytes.HasPrefix(e.k, prefix) {
			break
		}
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// keysUnder calls fn with every key of buckets under one of prefixes, in
// one statement (no BEGIN or COMMIT: a single statement sees one
// snapshot). Each key is decoded into one buffer, valid only until fn
// returns: fn copies what it keeps.
func (b *pgBackend) keysUnder(ctx context.Context, buckets []string, prefixes [][]byte, fn func(k []byte)) error {
	p := b.pool.Load()
	if p == nil {
		return errClosed
	}
	lo, hi := make([][]byte, len(prefixes)), make([][]byte, len(prefixes))
	for i, pre := range prefixes {
		lo[i], hi[i] = pre, prefixEnd(pre)
		if hi[i] == nil {
			return fmt.Errorf("key prefix %q has no end", pre)
		}
	}
	rctx, cancel := roundTripCtx(ctx)
	defer cancel()
	rows, err := p.pool.Query(rctx, `SELECT s.key FROM `+pgStateTable+` s
		JOIN unnest($3::bytea[], $4::bytea[]) AS r(lo, hi) ON s.key >= r.lo AND s.key < r.hi
		WHERE s.hotel = $1 AND s.bucket = ANY($2::text[])`, b.hotel, pgTextArray(buckets), pgByteaArray(lo), pgByteaArray(hi))
	if err != nil {
		return classify(hideSecret(fmt.Errorf("read keys: %w", ctxErr(rctx, err)), p.secret))
	}
	defer rows.Close()
	k := make([]byte, 0, 64) // never nil, as a key read is not
	for rows.Next() {
		raw, fds := rows.RawValues(), rows.FieldDescriptions()
		if len(raw) != 1 || len(fds) != 1 {
			return fmt.Errorf("read keys: a row of %d values and %d columns described, want a key", len(raw), len(fds))
		}
		if k, err = appendBytea(k[:0], raw[0], fds[0].Format); err != nil {
			return fmt.Errorf("read keys: %w", err)
		}
		fn(k)
	}
	if err := rows.Err(); err != nil {
		return classify(hideSecret(fmt.Errorf("read keys: %w", ctxErr(rctx, err)), p.secret))
	}
	return nil
}
