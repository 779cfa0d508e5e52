package state

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgWrite is a buffered write: a value, or a deletion.
type pgWrite struct {
	val []byte
	del bool
}

// pgTx is a transaction on PostgreSQL. It begins lazily, with its first
// read (BEGIN travels in the same round trip), and buffers its writes: reads
// consult the buffer first, and commit sends every write, the hotel's
// commit check and COMMIT in one pipelined round trip. So a transaction
// costs one round trip per read that the buffer cannot answer, plus one.
//
// Transactions run at REPEATABLE READ: a View sees one snapshot, as on
// bbolt; an Update conflicts with any other Update of the hotel that
// committed after its snapshot was taken (both write the hotel's row), and
// fails with ErrConflict instead of overwriting. Updates of one hotel are
// thus serialisable without SERIALIZABLE's predicate locks.
type pgTx struct {
	// ctx is the context of the View or Update: every round trip uses it.
	ctx   context.Context
	b     *pgBackend
	p     *sharedPool
	rw    bool
	conn  *pgxpool.Conn
	begun bool

	seq       int64 // the journal sequence, read at BEGIN in an update
	seqLoaded bool

	writes   map[string]map[string]pgWrite // bucket -> key -> write
	prefixes []pgPrefix                    // deleted prefixes, in order
	// reads remembers what get and getMany read (nil: absent): the
	// snapshot does not change under the transaction, so a key is read
	// from the database once.
	reads  map[string]map[string][]byte
	counts map[string]int // key counts of a view, read once
	bytes  int64          // the hotel's key and value bytes, read with counts
	// whole is set in a working-set view (see viewWorkingSet): the
	// buckets ws holds whole. Such a view reads nothing else.
	whole map[string]bool
	// ws is a working-set view's reads, by bucket, sorted by key (nil
	// value: absent). They share one buffer.
	ws map[string][]pgKV
}

type pgPrefix struct {
	bucket string
	prefix []byte
}

func (t *pgTx) writable() bool { return t.rw }

// buffered looks key up among the transaction's writes: found reports
// whether the buffer decides, val is nil for a deleted key.
func (t *pgTx) buffered(bucket string, key []byte) (val []byte, found bool) {
	if w, ok := t.writes[bucket][string(key)]; ok {
		if w.del {
			return nil, true
		}
		return w.val, true
	}
	if t.deletedPrefix(bucket, key) {
		return nil, true
	}
	if v, ok := t.reads[bucket][string(key)]; ok {
		return v, true
	}
	return nil, false
}

// written reports whether the transaction's writes decide key.
func (t *pgTx) written(bucket string, key []byte) bool {
	_, ok := t.writes[bucket][string(key)]
	return ok || t.deletedPrefix(bucket, key)
}

func (t *pgTx) deletedPrefix(bucket string, key []byte) bool {
	for _, p := range t.prefixes {
		if p.bucket == bucket && bytes.HasPrefix(key, p.prefix) {
			return true
		}
	}
	return false
}

// remember records a value read from the database (nil: absent).
func (t *pgTx) remember(bucket string, key, val []byte) {
	if t.reads == nil {
		t.reads = map[string]map[string][]byte{}
	}
	m := t.reads[bucket]
	if m == nil {
		m = map[string][]byte{}
		t.reads[bucket] = m
	}
	m[string(key)] = val
}

func (t *pgTx) get(bucket string, key []byte) ([]byte, error) {
	if v, ok, err := t.fromWorkingSet(bucket, key); ok {
		return v, err
	}
	if v, ok := t.buffered(bucket, key); ok {
		return v, nil
	}
	var val []byte
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = $3`, t.b.hotel, bucket, key)
	}, func(br pgx.BatchResults) error {
		err := br.QueryRow().Scan(&val)
		if errors.Is(err, pgx.ErrNoRows) {
			val = nil
			return nil
		}
		if err == nil && val == nil {
			val = []byte{} // an empty value is there, unlike a missing one
		}
		return err
	})
	if err == nil {
		t.remember(bucket, key, val)
	}
	return val, err
}

func (t *pgTx) getMany(bucket string, keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	if t.whole != nil {
		for i, k := range keys {
			v, _, err := t.fromWorkingSet(bucket, k)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	var ask [][]byte
	idx := map[string][]int{}
	for i, k := range keys {
		if v, ok := t.buffered(bucket, k); ok {
			out[i] = v
			continue
		}
		if _, dup := idx[string(k)]; !dup {
			ask = append(ask, k)
		}
		idx[string(k)] = append(idx[string(k)], i)
	}
	if len(ask) == 0 {
		return out, nil
	}
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT key, value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = ANY($3::bytea[])`, t.b.hotel, bucket, pgByteaArray(ask))
	}, func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		var arena byteArena // as scan's
		for rows.Next() {
			k, v, err := arena.row(rows) // v never nil: an empty value is there
			if err != nil {
				return fmt.Errorf("read bucket %s: %w", bucket, err)
			}
			for _, i := range idx[string(k)] {
				out[i] = v
			}
		}
		return rows.Err()
	})
	if err == nil {
		for _, k := range ask {
			t.remember(bucket, k, out[idx[string(k)][0]])
		}
	}
	return out, err
}

func (t *pgTx) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	if t.whole != nil {
		return t.scanWorkingSet(bucket, prefix, fn)
	}
	type kv struct{ k, v []byte }
	var rows []kv
	// The keys and values are decoded into an arena, not two allocations
	// a row: the full reads and the status of thousands of hotels scan
	// every ticket.
	var arena byteArena
	err := t.exchange(func(b *pgx.Batch) {
		where, bounds := keyRange(prefix)
		args := []any{t.b.hotel, bucket}
		for _, v := range bounds {
			args = append(args, v)
		}
		b.Queue(`SELECT key, value FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2`+where+` ORDER BY key`, args...)
	}, func(br pgx.BatchResults) error {
		r, err := br.Query()
		if err != nil {
			return err
		}
		defer r.Close()
		for r.Next() {
			k, v, err := arena.row(r)
			if err != nil {
				return fmt.Errorf("scan bucket %s: %w", bucket, err)
			}
			if t.written(bucket, k) {
				continue // the buffer's version is added below
			}
			rows = append(rows, kv{k, v})
		}
		return r.Err()
	})
	if err != nil {
		return err
	}
	if ws := t.writes[bucket]; len(ws) > 0 {
		for k, w := range ws {
			if !w.del && strings.HasPrefix(k, string(prefix)) {
				rows = append(rows, kv{[]byte(k), w.val})
			}
		}
		slices.SortFunc(rows, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	}
	for _, r := range rows {
		if err := fn(r.k, r.v); err != nil {
			return err
		}
	}
	return nil
}

func (t *pgTx) count(bucket string) (int, error) {
	if t.whole != nil {
		if !t.whole[bucket] {
			return 0, fmt.Errorf("%w: bucket %s", errOutsideWorkingSet, bucket)
		}
		return len(t.ws[bucket]), nil
	}
	if t.rw {
		n := 0
		err := t.scan(bucket, nil, func(_, _ []byte) error { n++; return nil })
		return n, err
	}
	if t.counts == nil {
		counts := map[string]int{}
		err := t.exchange(func(b *pgx.Batch) {
			b.Queue(`SELECT bucket, count(*), sum(octet_length(key) + octet_length(value))::bigint FROM `+pgStateTable+` WHERE hotel = $1 GROUP BY bucket`, t.b.hotel)
		}, func(br pgx.BatchResults) error {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var name string
				var n, size int64
				if err := rows.Scan(&name, &n, &size); err != nil {
					return err
				}
				counts[name] = int(n)
				t.bytes += size
			}
			return rows.Err()
		})
		if err != nil {
			return 0, err
		}
		t.counts = counts
	}
	return t.counts[bucket], nil
}

var errNotWritable = errors.New("transaction not writable")

func (t *pgTx) write(bucket string, key []byte, w pgWrite) error {
	if !t.rw {
		return errNotWritable
	}
	if t.writes == nil {
		t.writes = map[string]map[string]pgWrite{}
	}
	m := t.writes[bucket]
	if m == nil {
		m = map[string]pgWrite{}
		t.writes[bucket] = m
	}
	m[string(key)] = w
	return nil
}

func (t *pgTx) put(bucket string, key, val []byte) error {
	v := make([]byte, len(val)) // never nil: a nil []byte is SQL's NULL
	copy(v, val)
	return t.write(bucket, key, pgWrite{val: v})
}

// keyRange returns the SQL condition, on parameters $3 and $4, that selects
// the keys starting with prefix, and the values of those parameters (as
// many as the condition names).
func keyRange(prefix []byte) (string, [][]byte) {
	if len(prefix) == 0 {
		return "", nil
	}
	if end := prefixEnd(prefix); end != nil {
		return " AND key >= $3 AND key < $4", [][]byte{prefix, end}
	}
	return " AND key >= $3", [][]byte{prefix}
}

func (t *pgTx) del(bucket string, key []byte) error {
	return t.write(bucket, key, pgWrite{del: true})
}

func (t *pgTx) delPrefix(bucket string, prefix []byte) error {
	if !t.rw {
		return errNotWritable
	}
	for k := range t.writes[bucket] {
		if strings.HasPrefix(k, string(prefix)) {
			delete(t.writes[bucket], k)
		}
	}
	t.prefixes = append(t.prefixes, pgPrefix{bucket: bucket, prefix: bytes.Clone(prefix)})
	return nil
}

// byteArena hands out the keys and values a transaction reads as slices
// of a few large chunks instead of an allocation each. A chunk full is
// left to the slices already handed out of it, never copied, so a slice
// stays valid for as long as it is used.
type byteArena struct{ chunk []byte }

// bytea returns the bytes of a bytea column, as appendBytea decodes them,
// in the arena; never nil, so that an empty value is there.
func (a *byteArena) bytea(src []byte, format int16) ([]byte, error) {
	n := len(src)
	if format != pgx.BinaryFormatCode {
		n = max(len(src)-2, 0) / 2
	}
	if cap(a.chunk)-len(a.chunk) < n || a.chunk == nil {
		a.chunk = make([]byte, 0, max(n, min(2*cap(a.chunk), 256<<10), 4<<10))
	}
	start := len(a.chunk)
	chunk, err := appendBytea(a.chunk, src, format)
	if err != nil {
		return nil, err
	}
	a.chunk = chunk
	return chunk[start:len(chunk):len(chunk)], nil
}

// row returns the key and the value of the current row of rows, a key
// and a value column, in the arena.
func (a *byteArena) row(rows pgx.Rows) (k, v []byte, err error) {
	raw, fds := rows.RawValues(), rows.FieldDescriptions()
	if len(raw) != 2 || len(fds) != 2 {
		return nil, nil, fmt.Errorf("a row of %d values and %d columns described, want a key and a value", len(raw), len(fds))
	}
	if k, err = a.bytea(raw[0], fds[0].Format); err != nil {
		return nil, nil, fmt.Errorf("key: %w", err)
	}
	if v, err = a.bytea(raw[1], fds[1].Format); err != nil {
		return nil, nil, fmt.Errorf("value of %q: %w", k, err)
	}
	return k, v, nil
}

// appendBytea appends the bytes of a bytea column as the server sent it:
// raw in binary, \x and hex in text (PostgreSQL's default bytea_output;
// pgx decodes no other either). It is pgx's decoding without an
// allocation of its own.
func appendBytea(dst, src []byte, format int16) ([]byte, error) {
	if src == nil {
		return dst, errors.New("NULL, where the schema allows none")
	}
	if format == pgx.BinaryFormatCode {
		return append(dst, src...), nil
	}
	if len(src) < 2 || src[0] != '\\' || src[1] != 'x' {
		return dst, errors.New("bytea not in hex: the database must keep bytea_output = hex")
	}
	n := len(dst)
	dst = slices.Grow(dst, (len(src)-2)/2)[:n+(len(src)-2)/2]
	if _, err := hex.Decode(dst[n:], src[2:]); err != nil {
		return dst[:n], fmt.Errorf("bytea: %w", err)
	}
	return dst, nil
}
