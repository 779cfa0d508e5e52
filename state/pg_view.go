package state

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// errOutsideWorkingSet is the error of a read, in a working-set view (see
// [Store.ViewWorkingSet]), of something the working set does not hold.
var errOutsideWorkingSet = errors.New("read outside the working set of a working-set view")

// workingSet is what [Store.ViewWorkingSet] reads: buckets whole, and the
// journal entries the index buckets point to.
var (
	workingSetBuckets = []string{bucketMeta, bucketTickets, bucketCursors, bucketJournalPending, bucketJournalUnmarked}
	workingSetIndexes = []string{bucketJournalPending, bucketJournalUnmarked}
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
	t := &pgTx{ctx: ctx, b: b, p: p, whole: map[string]bool{}}
	for _, name := range workingSetBuckets {
		t.whole[name] = true
	}
	if err := t.readWorkingSet(); err != nil {
		return hideSecret(err, p.secret)
	}
	if err := fn(t); err != nil {
		return hideSecret(err, p.secret)
	}
	return ctx.Err()
}

// readWorkingSet reads the working set into t.reads, in one statement.
func (t *pgTx) readWorkingSet() error {
	ctx, cancel := roundTripCtx(t.ctx)
	defer cancel()
	rows, err := t.p.pool.Query(ctx, `SELECT bucket, key, value, true FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = ANY($2)
		UNION ALL
		SELECT $4, i.value, j.value, j.key IS NOT NULL FROM `+pgStateTable+` i
			LEFT JOIN `+pgStateTable+` j ON j.hotel = i.hotel AND j.bucket = $4 AND j.key = i.value
			WHERE i.hotel = $1 AND i.bucket = ANY($3)`,
		t.b.hotel, workingSetBuckets, workingSetIndexes, bucketJournal)
	if err != nil {
		return classify(fmt.Errorf("read the working set: %w", ctxErr(ctx, err)))
	}
	defer rows.Close()
	t.reads = map[string]map[string][]byte{}
	for _, name := range workingSetBuckets {
		t.reads[name] = map[string][]byte{}
	}
	for rows.Next() {
		var (
			bucket string
			k, v   []byte
			found  bool
		)
		if err := rows.Scan(&bucket, &k, &v, &found); err != nil {
			return classify(fmt.Errorf("read the working set: %w", ctxErr(ctx, err)))
		}
		switch {
		case !found:
			v = nil // an index pointing nowhere: absent
		case v == nil:
			v = []byte{} // an empty value is there, unlike a missing one
		}
		t.remember(bucket, k, v)
	}
	if err := rows.Err(); err != nil {
		return classify(fmt.Errorf("read the working set: %w", ctxErr(ctx, err)))
	}
	return nil
}

// fromWorkingSet answers a read of a working-set view: ok is false when t
// is no such view. A key of a bucket held whole that is not there is
// absent; any other key not read is an error.
func (t *pgTx) fromWorkingSet(bucket string, key []byte) (val []byte, ok bool, err error) {
	if t.whole == nil {
		return nil, false, nil
	}
	if v, found := t.reads[bucket][string(key)]; found {
		return v, true, nil
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
	keys := make([]string, 0, len(t.reads[bucket]))
	for k := range t.reads[bucket] {
		if strings.HasPrefix(k, string(prefix)) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys) // Go compares strings bytewise, as PostgreSQL's bytea
	for _, k := range keys {
		if err := fn([]byte(k), t.reads[bucket][k]); err != nil {
			return err
		}
	}
	return nil
}

// keysUnder calls fn with every key of buckets under one of prefixes, in
// one statement (no BEGIN or COMMIT: a single statement sees one
// snapshot).
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
		WHERE s.hotel = $1 AND s.bucket = ANY($2)`, b.hotel, buckets, lo, hi)
	if err != nil {
		return classify(hideSecret(fmt.Errorf("read keys: %w", ctxErr(rctx, err)), p.secret))
	}
	defer rows.Close()
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			return classify(hideSecret(fmt.Errorf("read keys: %w", ctxErr(rctx, err)), p.secret))
		}
		fn(k)
	}
	if err := rows.Err(); err != nil {
		return classify(hideSecret(fmt.Errorf("read keys: %w", ctxErr(rctx, err)), p.secret))
	}
	return nil
}
