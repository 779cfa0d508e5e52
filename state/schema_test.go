package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestSchemaVersionMatchesMigrations(t *testing.T) {
	if got := len(migrations) + 1; got != SchemaVersion {
		t.Fatalf("len(migrations)+1 = %d, SchemaVersion = %d: a migration or the constant is missing", got, SchemaVersion)
	}
}

// rawFile builds a bbolt file by hand.
func rawFile(t *testing.T, path string, fn func(btx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func putRaw(btx *bolt.Tx, bucket, key, val string) error {
	b, err := btx.CreateBucketIfNotExists([]byte(bucket))
	if err != nil {
		return err
	}
	return b.Put([]byte(key), []byte(val))
}

func TestNewerSchemaIsRefused(t *testing.T) {
	s, path := openTest(t, Options{})
	seed(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rawFile(t, path, func(btx *bolt.Tx) error {
		return putRaw(btx, bucketMeta, metaSchema, fmt.Sprint(SchemaVersion+1))
	})
	before, _ := os.ReadFile(path)
	for _, ro := range []bool{false, true} {
		_, err := Open(t.Context(), path, Options{ReadOnly: ro})
		if !errors.Is(err, ErrNewerSchema) {
			t.Fatalf("Open (read-only %t): err = %v, want ErrNewerSchema", ro, err)
		}
		want := fmt.Sprintf("file has schema %d, this ticketbridge knows up to %d", SchemaVersion+1, SchemaVersion)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name both versions (%q)", err, want)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Errorf("refusing a newer file changed it")
	}
}

func TestBadSchemaRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	rawFile(t, path, func(btx *bolt.Tx) error { return putRaw(btx, bucketMeta, metaSchema, "one") })
	_, err := Open(t.Context(), path, Options{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `meta/"schema_version"`) {
		t.Errorf("err = %v, want ErrCorrupt naming meta/schema_version", err)
	}
}

// legacyFile writes a schema-1 file of the test layout below: tickets kept
// as "ref|status" strings in a bucket "legacy".
func legacyFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	rawFile(t, path, func(btx *bolt.Tx) error {
		if err := putRaw(btx, bucketMeta, metaSchema, "1"); err != nil {
			return err
		}
		if err := putRaw(btx, bucketMeta, "adapter", "rt"); err != nil {
			return err
		}
		if err := putRaw(btx, "legacy", "t1", "RT#1|new"); err != nil {
			return err
		}
		return putRaw(btx, "legacy", "t2", "RT#2|done")
	})
	return path
}

// testMigrations is a table taking the legacy layout to schema 3: 1->2
// turns legacy records into ticket records, 2->3 stamps a meta key.
func testMigrations(fail bool) []migration {
	return []migration{
		func(btx *bolt.Tx) error {
			legacy := btx.Bucket([]byte("legacy"))
			tickets, err := btx.CreateBucketIfNotExists([]byte(bucketTickets))
			if err != nil {
				return err
			}
			err = legacy.ForEach(func(k, v []byte) error {
				ref, status, _ := strings.Cut(string(v), "|")
				data, err := encode(ticketVersion, Ticket{ID: string(k), Ref: ref, UpstreamStatus: status})
				if err != nil {
					return err
				}
				return tickets.Put(k, data)
			})
			if err != nil {
				return err
			}
			return btx.DeleteBucket([]byte("legacy"))
		},
		func(btx *bolt.Tx) error {
			if fail {
				return errors.New("disk says no")
			}
			return btx.Bucket([]byte(bucketMeta)).Put([]byte("migrated"), []byte("yes"))
		},
	}
}

func TestMigrationsRunForward(t *testing.T) {
	path := legacyFile(t)
	s, err := open(t.Context(), path, Options{}, testMigrations(false))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer func() { _ = s.Close() }()
	if s.Schema() != 3 {
		t.Errorf("Schema() = %d, want 3", s.Schema())
	}
	view(t, s, func(tx *Tx) error {
		if v, _, _ := tx.Meta(metaSchema); v != "3" {
			t.Errorf("meta schema_version = %q, want 3", v)
		}
		if v, _, _ := tx.Meta("migrated"); v != "yes" {
			t.Errorf("second migration did not run")
		}
		if v, _, _ := tx.Meta("adapter"); v != "rt" {
			t.Errorf("meta adapter lost: %q", v)
		}
		t2, ok, err := tx.Ticket("t2")
		if err != nil || !ok || t2.Ref != "RT#2" || t2.UpstreamStatus != "done" {
			t.Errorf("migrated ticket t2 = %+v, %t, %v", t2, ok, err)
		}
		if tx.kv.(boltTx).tx.Bucket([]byte("legacy")) != nil {
			t.Errorf("legacy bucket still there")
		}
		for _, name := range allBuckets {
			if tx.kv.(boltTx).tx.Bucket([]byte(name)) == nil {
				t.Errorf("bucket %s missing after migration", name)
			}
		}
		return nil
	})

	// The old file was copied aside first, still at schema 1.
	bak := path + ".schema-1.bak"
	fi, err := os.Stat(bak)
	if err != nil {
		t.Fatalf("no copy of the old file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("backup mode = %v, want 0600", fi.Mode().Perm())
	}
	old, err := bolt.Open(bak, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	err = old.View(func(btx *bolt.Tx) error {
		if v := btx.Bucket([]byte(bucketMeta)).Get([]byte(metaSchema)); string(v) != "1" {
			t.Errorf("backup schema = %q, want 1", v)
		}
		if btx.Bucket([]byte("legacy")).Get([]byte("t1")) == nil {
			t.Errorf("backup lacks the legacy data")
		}
		return nil
	})
	_ = old.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Reopening runs nothing again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(bak); err != nil {
		t.Fatal(err)
	}
	s2, err := open(t.Context(), path, Options{}, testMigrations(true)) // would fail if run
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	_ = s2.Close()
	if _, err := os.Stat(bak); err == nil {
		t.Errorf("reopening a current file copied it aside again")
	}
}

func TestFailedMigrationChangesNothing(t *testing.T) {
	path := legacyFile(t)
	s, err := open(t.Context(), path, Options{}, testMigrations(true))
	if err == nil {
		_ = s.Close()
		t.Fatal("open succeeded with a failing migration")
	}
	for _, want := range []string{"migrate schema 2 to 3: disk says no", "the file is unchanged"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	_ = db.View(func(btx *bolt.Tx) error {
		if v := btx.Bucket([]byte(bucketMeta)).Get([]byte(metaSchema)); string(v) != "1" {
			t.Errorf("schema after a failed migration = %q, want 1", v)
		}
		if btx.Bucket([]byte("legacy")) == nil || btx.Bucket([]byte(bucketTickets)) != nil {
			t.Errorf("the first migration's work was kept")
		}
		return nil
	})
}

func TestReadOnlyOpenOfOldSchema(t *testing.T) {
	path := legacyFile(t)
	_, err := open(t.Context(), path, Options{ReadOnly: true}, testMigrations(false))
	if !errors.Is(err, ErrOldSchema) || !strings.Contains(err.Error(), "file has schema 1, this ticketbridge needs 3") {
		t.Errorf("err = %v, want ErrOldSchema naming both versions", err)
	}
}
