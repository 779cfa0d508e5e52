package state

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// boltBackend keeps the buckets in a bbolt file: each update is one bbolt
// commit (two fsyncs).
type boltBackend struct {
	db *bolt.DB
	// commits counts the updates committed, for the benchmarks' fsync
	// figure.
	commits atomic.Int64
}

// view and update check ctx when they start and when fn returns: a bbolt
// transaction cannot be interrupted, and costs a local read or two fsyncs,
// so a done ctx only keeps the next one from starting, and an update
// from committing.
func (b *boltBackend) view(ctx context.Context, fn func(kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return b.db.View(func(btx *bolt.Tx) error {
		if err := fn(boltTx{btx}); err != nil {
			return err
		}
		return ctx.Err()
	})
}

func (b *boltBackend) update(ctx context.Context, fn func(kvTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := b.db.Update(func(btx *bolt.Tx) error {
		if err := fn(boltTx{btx}); err != nil {
			return err
		}
		return ctx.Err() // a non-nil error rolls back
	})
	if err == nil {
		b.commits.Add(1)
	}
	return err
}

func (b *boltBackend) close() error { return b.db.Close() }

// boltTx is a kvTx over a bbolt transaction.
type boltTx struct{ tx *bolt.Tx }

// bucket returns a bucket of the current schema; Open guarantees they exist.
func (t boltTx) bucket(name string) *bolt.Bucket {
	b := t.tx.Bucket([]byte(name))
	if b == nil {
		// Only a file changed behind Open's back gets here.
		panic(fmt.Sprintf("state: bucket %s missing from an opened state file", name))
	}
	return b
}

func (t boltTx) get(bucket string, key []byte) ([]byte, error) {
	return t.bucket(bucket).Get(key), nil
}

func (t boltTx) getMany(bucket string, keys [][]byte) ([][]byte, error) {
	b := t.bucket(bucket)
	out := make([][]byte, len(keys))
	for i, k := range keys {
		out[i] = b.Get(k)
	}
	return out, nil
}

func (t boltTx) put(bucket string, key, val []byte) error {
	return t.bucket(bucket).Put(key, val)
}

func (t boltTx) del(bucket string, key []byte) error {
	return t.bucket(bucket).Delete(key)
}

func (t boltTx) delPrefix(bucket string, prefix []byte) error {
	c := t.bucket(bucket).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) scan(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	c := t.bucket(bucket).Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

func (t boltTx) nextSeq(bucket string) (uint64, error) {
	return t.bucket(bucket).NextSequence()
}

func (t boltTx) count(bucket string) (int, error) {
	return t.bucket(bucket).Stats().KeyN, nil
}

func (t boltTx) writable() bool { return t.tx.Writable() }
