package state

import (
	"bytes"
	"context"
	"math"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Keys and values of any bytes come back as written, through every read
// of kvTx and a deletion of many keys at once: on PostgreSQL they travel
// as text arrays of hex (pgByteaArray), where quotes, backslashes, braces,
// commas and zero bytes would break a literal written by hand.
func TestKVAnyBytes(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	kvs := []struct{ k, v []byte }{
		{[]byte(`a"{,}\`), all},                             // a value longer than one hex chunk
		{[]byte{0, 0xff, '\\', 'x'}, []byte{}},              // an empty value is there
		{[]byte("b NULL"), []byte(`{"\\x00"}`)},             // a value that reads as a literal
		{bytes.Repeat([]byte{'k'}, 300), []byte("plain")},   // a long key
		{[]byte("c"), bytes.Repeat([]byte{'\\', '"'}, 100)}, // escapes, many
	}
	eachBackend(t, func(t *testing.T, b testBackend) {
		s, _ := b.openTest(t, Options{})
		update(t, s, func(tx *Tx) error {
			for _, e := range kvs {
				if err := tx.kv.put(bucketMeta, e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		})
		keys := make([][]byte, len(kvs))
		for i, e := range kvs {
			keys[i] = e.k
		}
		view(t, s, func(tx *Tx) error {
			got, err := tx.kv.getMany(bucketMeta, keys)
			if err != nil {
				return err
			}
			n := 0
			if err := tx.kv.scan(bucketMeta, nil, func(k, v []byte) error {
				for _, e := range kvs {
					if bytes.Equal(k, e.k) {
						n++
						if !bytes.Equal(v, e.v) {
							t.Errorf("scan: %q = %q, want %q", k, v, e.v)
						}
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if n != len(kvs) {
				t.Errorf("scan found %d of the %d keys", n, len(kvs))
			}
			for i, e := range kvs {
				if got[i] == nil || !bytes.Equal(got[i], e.v) {
					t.Errorf("getMany: %q = %q, want %q", e.k, got[i], e.v)
				}
			}
			return nil
		})
		update(t, s, func(tx *Tx) error {
			for _, k := range keys[:3] {
				if err := tx.kv.del(bucketMeta, k); err != nil {
					return err
				}
			}
			return nil
		})
		view(t, s, func(tx *Tx) error {
			got, err := tx.kv.getMany(bucketMeta, keys)
			if err != nil {
				return err
			}
			for i := range kvs {
				if deleted := i < 3; deleted != (got[i] == nil) {
					t.Errorf("after deleting the first three: %q = %q", kvs[i].k, got[i])
				}
			}
			return nil
		})
	})
}

// The text and bigint array literals come back from PostgreSQL as the
// values written, whatever their bytes: an element spelled NULL stays a
// string, quotes and backslashes stay themselves.
func TestPGArrayLiterals(t *testing.T) {
	loc := postgresBackend(t).location(t)
	conn, err := pgx.Connect(t.Context(), loc)
	if err != nil {
		t.Fatalf("connect: %v", hideSecret(err, pgPassword(loc)))
	}
	defer func() { _ = conn.Close(context.Background()) }()
	texts := []string{"h1", "NULL", "null", "", `a"b`, `c\d`, `{x,y}`, " spaced ", "é"}
	var gotTexts []string
	var nulls int
	if err := conn.QueryRow(t.Context(), `SELECT $1::text[], (SELECT count(*) FROM unnest($1::text[]) AS e WHERE e IS NULL)`,
		pgTextArray(texts)).Scan(&gotTexts, &nulls); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotTexts, texts) || nulls != 0 {
		t.Errorf("text[] literal: got %q (%d NULL), want %q", gotTexts, nulls, texts)
	}
	ints := []int64{0, 1, -7, math.MaxInt64, math.MinInt64}
	var gotInts []int64
	if err := conn.QueryRow(t.Context(), `SELECT $1::bigint[]`, pgInt8Array(ints)).Scan(&gotInts); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gotInts, ints) {
		t.Errorf("bigint[] literal: got %v, want %v", gotInts, ints)
	}
	for _, empty := range []string{pgTextArray(nil), pgInt8Array(nil)} {
		var n int
		if err := conn.QueryRow(t.Context(), `SELECT cardinality($1::text[])`, empty).Scan(&n); err != nil || n != 0 {
			t.Errorf("empty literal %q: %d elements, %v", empty, n, err)
		}
	}
}

// appendBytea decodes what a scan reads as pgx would: binary as it is,
// and hex text; it refuses NULL, the escape format (bytea_output =
// escape, which pgx does not read either) and hex that is not.
func TestAppendBytea(t *testing.T) {
	for _, c := range []struct {
		src    string
		format int16
		want   string
	}{
		{"\x00a\"\\", pgx.BinaryFormatCode, "\x00a\"\\"},
		{`\x00ff41`, pgx.TextFormatCode, "\x00\xffA"},
		{`\x`, pgx.TextFormatCode, ""},
	} {
		got, err := appendBytea([]byte("pre"), []byte(c.src), c.format)
		if err != nil || string(got) != "pre"+c.want {
			t.Errorf("appendBytea(%q, %d) = %q, %v; want %q", c.src, c.format, got, err, "pre"+c.want)
		}
	}
	for _, src := range [][]byte{nil, []byte(`\x0`), []byte(`\xzz`), []byte(`a\\b\000`)} {
		if got, err := appendBytea([]byte("pre"), src, pgx.TextFormatCode); err == nil || string(got) != "pre" {
			t.Errorf("appendBytea(%q) = %q, %v; want an error and nothing appended", src, got, err)
		}
	}
}
