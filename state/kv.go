package state

import (
	"bytes"
	"context"
)

// backend is where a Store keeps its buckets: a bbolt file ([boltBackend])
// or a PostgreSQL database ([pgBackend]). Everything above it (records,
// validation, the journal's indexes) is written once, against [kvTx].
type backend interface {
	// view runs fn in a read-only transaction that sees one consistent
	// snapshot. fn's error is returned as is. The transaction fails with
	// ctx's error once ctx is done (bbolt: when it starts, and when fn
	// returns).
	view(ctx context.Context, fn func(kvTx) error) error
	// update runs fn in a read-write transaction and commits it when fn
	// returns nil; when fn fails, or the commit does, nothing of it is
	// kept. fn's error is returned as is; a commit error is returned
	// unwrapped, for the Store to wrap. ctx bounds it as it does view:
	// nothing is kept once ctx is done before the commit.
	update(ctx context.Context, fn func(kvTx) error) error
	// close releases the backend; a second call returns nil.
	close() error
}

// kvTx is one transaction over the named buckets of the current schema.
// Keys are ordered by their bytes. A value handed out is valid until the
// transaction writes again or ends; callers decode or copy it at once.
// Methods return an error only for a failing backend (I/O, network,
// a transaction that is not writable).
type kvTx interface {
	// get returns the value under key, nil when there is none.
	get(bucket string, key []byte) ([]byte, error)
	// getMany returns the values under keys, in the same order; nil for
	// each absent key.
	getMany(bucket string, keys [][]byte) ([][]byte, error)
	// put stores val under key.
	put(bucket string, key, val []byte) error
	// del removes key; removing an absent key is not an error.
	del(bucket string, key []byte) error
	// delPrefix removes every key that starts with prefix.
	delPrefix(bucket string, prefix []byte) error
	// scan calls fn with every key that starts with prefix (all keys for
	// an empty prefix), in key order. An error from fn stops the scan and
	// is returned as is. fn must not write to the transaction.
	scan(bucket string, prefix []byte, fn func(k, v []byte) error) error
	// nextSeq returns the next number of the bucket's sequence (1, 2, ...);
	// only the journal has one.
	nextSeq(bucket string) (uint64, error)
	// count returns the number of keys in the bucket.
	count(bucket string) (int, error)
	// writable reports whether the transaction belongs to an update.
	writable() bool
}

// prefixEnd returns the smallest key greater than every key starting with
// prefix, or nil when there is none (an empty prefix, or one of 0xff
// bytes only).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
