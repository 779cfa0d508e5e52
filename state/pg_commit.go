package state

import (
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// exchange runs one round trip: BEGIN first when the transaction has not
// begun, then queue's statements, whose results read reads in order. It
// runs under the transaction's context, bounded by pgRoundTripTimeout.
func (t *pgTx) exchange(queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	ctx, cancel := roundTripCtx(t.ctx)
	defer cancel()
	if t.conn == nil {
		c, err := t.p.pool.Acquire(ctx)
		if err != nil {
			return fmt.Errorf("connect to PostgreSQL: %w", ctxErr(ctx, err))
		}
		t.conn = c
	}
	batch := &pgx.Batch{}
	beginning := !t.begun
	if beginning {
		if t.rw {
			batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ")
			batch.Queue(`SELECT journal_seq FROM `+pgHotelsTable+` WHERE hotel = $1`, t.b.hotel)
		} else {
			batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
		}
	}
	queue(batch)
	br := t.conn.SendBatch(ctx, batch)
	err := func() error {
		if beginning {
			if _, err := br.Exec(); err != nil {
				return err
			}
			t.begun = true
			if t.rw {
				if err := br.QueryRow().Scan(&t.seq); err != nil {
					if errors.Is(err, pgx.ErrNoRows) {
						return fmt.Errorf("hotel %q is not in %s", t.b.hotel, pgHotelsTable)
					}
					return err
				}
				t.seqLoaded = true
			}
		}
		return read(br)
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return classify(ctxErr(ctx, err))
}

func (t *pgTx) nextSeq(bucket string) (uint64, error) {
	if !t.rw {
		return 0, errNotWritable
	}
	if bucket != bucketJournal {
		return 0, fmt.Errorf("bucket %s has no sequence", bucket)
	}
	if !t.seqLoaded {
		// Nothing was read yet: begin, which reads the sequence.
		if err := t.exchange(func(*pgx.Batch) {}, func(pgx.BatchResults) error { return nil }); err != nil {
			return 0, err
		}
	}
	t.seq++
	return uint64(t.seq), nil
}

// commit ends the transaction: a view's or an update without writes with
// COMMIT alone (nothing when it never began), an update's with its writes in
// one round trip.
func (t *pgTx) commit() error {
	if !t.rw || (len(t.writes) == 0 && len(t.prefixes) == 0) {
		if !t.begun {
			return nil
		}
		err := t.exchange(func(b *pgx.Batch) { b.Queue("COMMIT") }, func(br pgx.BatchResults) error {
			_, err := br.Exec()
			return err
		})
		if err == nil {
			t.begun = false
		}
		return err
	}
	var seq *int64
	if t.seqLoaded {
		seq = &t.seq
	}
	n := 0
	err := t.exchange(func(b *pgx.Batch) {
		queue := func(sql string, args ...any) { b.Queue(sql, args...); n++ }
		var fence *int64
		if t.b.fence != 0 {
			fence = &t.b.fence
		}
		queue(`SELECT ticketbridge_commit($1, $2, $3)`, t.b.hotel, seq, fence)
		for _, p := range t.prefixes {
			where, args := keyRange(p.prefix)
			queue(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2`+where, append([]any{t.b.hotel, p.bucket}, args...)...)
		}
		buckets := make([]string, 0, len(t.writes))
		for name := range t.writes {
			buckets = append(buckets, name)
		}
		slices.Sort(buckets) // a stable order of row locks
		for _, name := range buckets {
			var putK, putV, delK [][]byte
			keys := make([]string, 0, len(t.writes[name]))
			for k := range t.writes[name] {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				w := t.writes[name][k]
				if w.del {
					delK = append(delK, []byte(k))
				} else {
					putK, putV = append(putK, []byte(k)), append(putV, w.val)
				}
			}
			if len(delK) > 0 {
				queue(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = ANY($3::bytea[])`, t.b.hotel, name, pgByteaArray(delK))
			}
			if len(putK) > 0 {
				queue(`INSERT INTO `+pgStateTable+` (hotel, bucket, key, value)
					SELECT $1, $2, k, v FROM unnest($3::bytea[], $4::bytea[]) AS w(k, v)
					ON CONFLICT (hotel, bucket, key) DO UPDATE SET value = excluded.value`, t.b.hotel, name, pgByteaArray(putK), pgByteaArray(putV))
			}
		}
		b.Queue("COMMIT")
	}, func(br pgx.BatchResults) error {
		for range n + 1 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	t.begun = false
	return nil
}

// journalSeq reads the hotel's journal sequence (for a copy).
func (t *pgTx) journalSeq() (int64, error) {
	var seq int64
	err := t.exchange(func(b *pgx.Batch) {
		b.Queue(`SELECT journal_seq FROM `+pgHotelsTable+` WHERE hotel = $1`, t.b.hotel)
	}, func(br pgx.BatchResults) error {
		return br.QueryRow().Scan(&seq)
	})
	return seq, err
}

// pgByteaArray returns vals as the text of a PostgreSQL bytea[] literal,
// each element in hex, for a parameter cast to bytea[]. pgx's own text
// encoding of a [][]byte (unprepared statements send their parameters as
// text) made a string of each element and then a quoted copy of it: at
// thousands of hotels that was a fifth of what the daemon allocated, in
// the commits that write a hotel's tickets. This is one string.
func pgByteaArray(vals [][]byte) string {
	n := 2
	for _, v := range vals {
		n += len(`"\\x",`) + 2*len(v)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	var chunk [128]byte
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"\\x`) // a backslash in a quoted element is written twice
		for len(v) > 0 {
			part := v[:min(len(v), len(chunk)/2)]
			b.Write(chunk[:hex.Encode(chunk[:], part)])
			v = v[len(part):]
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// pgTextArray returns vals as the text of a PostgreSQL text[] literal, for
// a parameter cast to text[]: one string, as pgByteaArray is. Every
// element is quoted, so that none reads as NULL.
func pgTextArray(vals []string) string {
	n := 2
	for _, v := range vals {
		n += len(`"",`) + len(v)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('{')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		for j := range len(v) {
			if v[j] == '"' || v[j] == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(v[j])
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// pgInt8Array returns vals as the text of a PostgreSQL bigint[] literal,
// for a parameter cast to bigint[].
func pgInt8Array(vals []int64) string {
	b := make([]byte, 0, 2+len(vals)*8)
	b = append(b, '{')
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return string(append(b, '}'))
}
