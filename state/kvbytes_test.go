package state

import (
	"bytes"
	"testing"
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
