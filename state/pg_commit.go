package state

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	gosync "sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// exchange runs one round trip: BEGIN first when the transaction has not
// begun, then queue's statements, whose results read reads in order. It
// runs under the transaction's context, bounded by pgRoundTripTimeout.
func (t *pgTx) exchange(queue func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	ctx, cancel := roundTripCtx(t.ctx)
	defer cancel()
	if err := t.acquire(ctx); err != nil {
		return err
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

// acquire takes the transaction's connection from the pool, once.
func (t *pgTx) acquire(ctx context.Context) error {
	if t.conn != nil {
		return nil
	}
	c, err := t.p.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", ctxErr(ctx, err))
	}
	t.conn = c
	return nil
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
	return t.commitWrites()
}

// OIDs and format codes of the commit's parameters (pgconn takes them as
// numbers).
const (
	oidText      = 25
	oidInt8      = 20
	oidBytea     = 17
	oidByteaList = 1001 // bytea[]
	fmtText      = 0
	fmtBinary    = 1
)

// commitBuffers are the buffers commits encode their arrays into, shared
// by the stores of the process.
var commitBuffers = gosync.Pool{New: func() any { return new(commitBuf) }}

// commitBuf is one commit's encoding room: its bytea[] parameters, one
// after the other.
type commitBuf struct{ buf []byte }

// commitBufKeepMax is the largest buffer kept for the next commit: an
// import of a large hotel writes megabytes, which the commits of small
// hotels would otherwise hold.
const commitBufKeepMax = 1 << 20

// commitWrites sends an update's writes, the hotel's commit check and
// COMMIT in one round trip (BEGIN first when nothing was read).
//
// It goes below pgx's batch, to pgconn's, for one reason: pgx sends an
// unprepared statement's parameters as text, and bytea as text is hex.
// A commit that rewrote a hotel's 100 tickets copied its values as hex
// three times (a literal, pgx's parameter buffer, the message), the
// largest allocation of a daemon of 2,000 quiet hotels. Here each array
// travels in PostgreSQL's binary array format (appendByteaArrayHeader),
// encoded once into a pooled buffer, with its type named, and is copied
// once more, into the message.
func (t *pgTx) commitWrites() error {
	ctx, cancel := roundTripCtx(t.ctx)
	defer cancel()
	if err := t.acquire(ctx); err != nil {
		return err
	}
	cb := commitBuffers.Get().(*commitBuf)
	defer func() {
		if cap(cb.buf) <= commitBufKeepMax {
			cb.buf = cb.buf[:0]
			commitBuffers.Put(cb)
		}
	}()
	hotel := []byte(t.b.hotel)
	var seq, fence []byte // NULL unless known
	if t.seqLoaded {
		seq = strconv.AppendInt(nil, t.seq, 10)
	}
	if t.b.fence != 0 {
		fence = strconv.AppendInt(nil, t.b.fence, 10)
	}
	batch := &pgconn.Batch{}
	beginning := !t.begun
	if beginning {
		batch.ExecParams("BEGIN ISOLATION LEVEL REPEATABLE READ", nil, nil, nil, nil)
	}
	// The hotel's row: its fence, its journal sequence, the conflict of
	// two writers.
	batch.ExecParams(`SELECT ticketbridge_commit($1, $2, $3)`, [][]byte{hotel, seq, fence},
		[]uint32{oidText, oidInt8, oidInt8}, nil, nil)
	for _, p := range t.prefixes {
		where, bounds := keyRange(p.prefix)
		vals := append([][]byte{hotel, []byte(p.bucket)}, bounds...)
		batch.ExecParams(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2`+where, vals, []uint32{oidText, oidText, oidBytea, oidBytea}[:len(vals)], []int16{fmtText, fmtText, fmtBinary, fmtBinary}[:len(vals)], nil)
	}
	buckets := make([]string, 0, len(t.writes))
	for name := range t.writes {
		buckets = append(buckets, name)
	}
	slices.Sort(buckets) // a stable order of row locks
	var keys []string
	for _, name := range buckets {
		keys = keys[:0]
		for k := range t.writes[name] {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w := t.writes[name]
		dels, puts := 0, 0
		for _, k := range keys {
			if w[k].del {
				dels++
			} else {
				puts++
			}
		}
		if dels > 0 {
			start := len(cb.buf)
			cb.buf = appendByteaArrayHeader(cb.buf, dels)
			for _, k := range keys {
				if w[k].del {
					cb.buf = appendByteaElem(cb.buf, k)
				}
			}
			batch.ExecParams(`DELETE FROM `+pgStateTable+` WHERE hotel = $1 AND bucket = $2 AND key = ANY($3)`,
				[][]byte{hotel, []byte(name), cb.buf[start:]}, []uint32{oidText, oidText, oidByteaList}, []int16{fmtText, fmtText, fmtBinary}, nil)
		}
		if puts > 0 {
			// Two arrays, one after the other: should the values' growth
			// move the buffer, the keys stay where they were written.
			start := len(cb.buf)
			cb.buf = appendByteaArrayHeader(cb.buf, puts)
			for _, k := range keys {
				if !w[k].del {
					cb.buf = appendByteaElem(cb.buf, k)
				}
			}
			ks, mid := cb.buf[start:], len(cb.buf)
			cb.buf = appendByteaArrayHeader(cb.buf, puts)
			for _, k := range keys {
				if !w[k].del {
					cb.buf = appendByteaElem(cb.buf, w[k].val)
				}
			}
			batch.ExecParams(`INSERT INTO `+pgStateTable+` (hotel, bucket, key, value)
				SELECT $1, $2, k, v FROM unnest($3::bytea[], $4::bytea[]) AS w(k, v)
				ON CONFLICT (hotel, bucket, key) DO UPDATE SET value = excluded.value`,
				[][]byte{hotel, []byte(name), ks, cb.buf[mid:]}, []uint32{oidText, oidText, oidByteaList, oidByteaList}, []int16{fmtText, fmtText, fmtBinary, fmtBinary}, nil)
		}
	}
	batch.ExecParams("COMMIT", nil, nil, nil, nil)
	mrr := t.conn.Conn().PgConn().ExecBatch(ctx, batch)
	err := func() error {
		for i := 0; mrr.NextResult(); i++ {
			if _, err := mrr.ResultReader().Close(); err != nil {
				return err
			}
			if i == 0 && beginning {
				t.begun = true // a failure after it rolls back
			}
		}
		return nil
	}()
	if cerr := mrr.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return classify(ctxErr(ctx, err))
	}
	t.begun = false
	return nil
}

// appendByteaArrayHeader appends to buf the head of a bytea[] of n
// elements in PostgreSQL's binary format of arrays: one dimension, no
// NULL, the element type, the length and the lower bound. The n elements
// follow, each appended with appendByteaElem.
func appendByteaArrayHeader(buf []byte, n int) []byte {
	buf = binary.BigEndian.AppendUint32(buf, 1) // dimensions
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULL
	buf = binary.BigEndian.AppendUint32(buf, oidBytea)
	buf = binary.BigEndian.AppendUint32(buf, uint32(n))
	return binary.BigEndian.AppendUint32(buf, 1) // lower bound
}

// appendByteaElem appends one element of a binary bytea[]: its length,
// then its bytes.
func appendByteaElem[E string | []byte](buf []byte, v E) []byte {
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(v)))
	return append(buf, v...)
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
// text) made a string of each element and then a quoted copy of it. This
// is one string. It serves the reads of many keys, which go through pgx's
// batch; commits send their arrays in binary (appendByteaArrayHeader).
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
