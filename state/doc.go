// Package state is ticketbridge's persistent memory: everything the sync
// engine must remember between cycles and across restarts, in one bbolt
// file (the default) or in a PostgreSQL database (see "PostgreSQL" below).
//
// The records, their checks and the journal's indexes are written once,
// over a small key-value transaction (named buckets of ordered byte keys:
// get, put, delete, prefix scan, a sequence) that each backend implements;
// callers see only [Store] and [Tx]. One conformance suite runs on both.
//
// # What is stored
//
// The layout below is the bbolt file's; PostgreSQL keeps the same buckets
// and keys as rows (see "PostgreSQL").
//
// Every value is a JSON object carrying a record version in its "v" field, so
// the file can be inspected with any bbolt tool and a record of an unknown
// version is refused instead of misread. Keys are plain strings.
//
//	bucket            key                         value
//	meta              schema_version              decimal schema number (reserved)
//	                  created_at                  RFC 3339 time the file was made (reserved)
//	                  any other key               engine value, e.g. the adapter name
//	tickets           <ticket id>                 [Ticket]: one per upstream ticket
//	mirrored          <ticket id>/<message id>    [MirroredMessage]: upstream message -> helpdesk id
//	own               <ticket id>/<message id>    [OwnMessage]: the bridge's own upstream posts
//	journal           <event id>                  [Entry]: one per helpdesk event carried upstream
//	journal_pending   <seq>                       event id of each pending entry (index)
//	journal_unmarked  <seq>                       event id of each sent entry not yet marked in the helpdesk (index)
//	journal_failed    <seq>                       event id of each failed entry (index)
//	journal_ticket    <ticket id>/<seq>           event id, for every entry of a ticket (index)
//	cursors           <adapter cursor name>       the adapter's opaque cursor
//	cycles            last                        [Cycle]: the last cycle
//	                  last_success                [Cycle]: the last cycle that succeeded
//	notices           <kind>/<subject>            a notification's episode (package notify's Episode)
//	audit             <ticket id>/<day>/<stamp>/<hash>  [Audit]: a request's audit trail, oldest first (see audit.go)
//	audit_days        <day>/<ticket id>           the tickets with entries of a day, for [Tx.PruneAudit]
//
// <seq> is the journal sequence number, 16 lower-case hex digits, so that the
// byte order of the index keys is the order in which entries were journaled.
// Because "/" separates a ticket id from the rest of a key, ticket ids and
// message ids may not contain "/" (upstream ids are UUIDs).
//
// The index buckets are maintained by [Tx.PutJournal] and [Tx.PruneJournal]
// only; they make the engine's per-cycle questions ("what is pending?", "is
// this message known?") cost a handful of page reads, not a scan.
//
// # Schema versions
//
// meta/schema_version is the layout's version ([SchemaVersion]). Migrations
// are forward only: each one moves a file from version N to N+1, and all the
// migrations a file needs run in a single write transaction when [Open] opens
// it, so a crash leaves either the old or the new layout, never a mix. Before
// migrating, Open writes a copy of the old file next to it
// (<path>.schema-<N>.bak) so that an operator can go back to the older
// binary. A file written by a newer ticketbridge is refused with
// [ErrNewerSchema]; a read-only open of an older file is refused with
// [ErrOldSchema] (it cannot migrate). A bbolt file without the meta bucket is
// not a state file and is refused with [ErrNotStateFile].
//
// # Durability
//
// On bbolt, each [Store.Update] is one commit: the changed pages are written and
// fdatasync'ed, then the meta page is written and fdatasync'ed. So an Update
// costs two fsyncs however many records it writes (a third when the file
// grows), and after it returns nil its changes survive a crash or power
// loss; if it returns an error, or its function does, nothing of it was
// written. The engine groups a cycle's work into a few Updates, so a cycle
// costs a bounded number of fsyncs. [Store.View] never writes. On
// PostgreSQL an Update that returned nil was committed, as durably as the
// server's synchronous_commit setting makes it (by default: flushed to the
// write-ahead log); one that failed left nothing.
//
// # Locking
//
// bbolt takes an flock on the file: an exclusive one for a read-write open,
// a shared one for [Options.ReadOnly]. A second read-write open of the same
// file, by another process or by this one, fails after [Options.LockTimeout]
// (default 1 s) with [ErrLocked] instead of hanging. A running daemon holds
// the exclusive lock for as long as it runs, so a read-only open (ticketbridge
// status) or an offline backup ([BackupFile]) fails with ErrLocked while the
// daemon runs; a live copy is made by the process that holds the store, with
// [Store.Backup] or [Store.BackupFile], which do not stop writers.
//
// # File mode
//
// The file holds guest names and message texts, so it is created with mode
// 0600. When an existing file is readable or writable by group or others,
// a read-write Open tightens it to 0600 and logs a warning; a read-only open
// only logs the warning (it changes nothing on disk).
//
// # PostgreSQL
//
// [Open] of a PostgreSQL connection string, a postgres:// or postgresql://
// URL or keyword/value settings ("host=db dbname=tb", see [IsURL]), keeps
// the state in that database, in three tables shared by any number of hotels: every row
// carries its hotel ([Options.Hotel], default [DefaultHotel]).
//
//	ticketbridge_schema   version                   the schema version, one row
//	ticketbridge_hotels   hotel, created_at,        one row per hotel; every
//	                      journal_seq, commits      Update's commit goes through it
//	ticketbridge_state    hotel, bucket, key, value a row per bucket key above
//	                      (primary key hotel, bucket, key; key and value bytea)
//
//	ticketbridge_replicas replica, started_at,      the live replicas (see
//	                      expires_at                [Leases])
//	ticketbridge_leases   hotel, replica, fence,    which replica syncs each
//	                      taken_at, expires_at      hotel, and until when
//
// The database's schema version ([PostgresSchemaVersion]) counts its own
// migrations: the records' layout of [SchemaVersion] and the tables only a
// database has (the leases, version 2).
//
// Schema versions are forward-only as a file's: the migrations an older
// database needs run in one transaction at Open (PostgreSQL's DDL is
// transactional), at READ COMMITTED whatever the server's default and
// under an advisory lock, so that replicas starting together migrate once
// (the one that waited reads the schema the other committed); a database
// of a newer schema is refused with
// [ErrNewerSchema]. Take a pg_dump before upgrading: no copy is made.
//
// An Update is one transaction at REPEATABLE READ. It begins with its first
// read (BEGIN travels in the same round trip), buffers its writes (its
// reads see them), remembers what it read (its snapshot does not change),
// and at the end sends every write, the hotel's commit row and COMMIT in
// one pipelined round trip, the keys and values as binary arrays. So an Update costs one round trip per read that
// its writes and earlier reads cannot answer, plus one, however much it
// writes. A View costs one round trip per read plus one for COMMIT;
// [Store.ViewWorkingSet], what a sync cycle reads at its start, costs one
// round trip in all (one statement, no BEGIN or COMMIT), its rows in
// binary, read into buffers the process's views share. Two
// Updates of one hotel both write its commit row, so under REPEATABLE READ
// the one that did not see the other's commit fails with [ErrConflict] and
// keeps nothing: writers of a hotel are serialised without SERIALIZABLE's
// predicate locks. Stores of one process opened with the same URL share a
// connection pool of at most [DefaultMaxConns] connections
// (pool_max_conns in the URL, or TICKETBRIDGE_PG_MAX_CONNS, sizes it); the
// process's [Leases] of that database have [LeaseConns] of their own.
//
// There is no lock like bbolt's: readers (ticketbridge status) read the
// database while the daemon runs, [Options.LockTimeout] does not apply, and
// a second read-write Store of the same hotel opens; only the commit check
// above keeps the two from overwriting each other's transactions. Replicas
// that share hotels hold leases instead ([Leases]): a Store opened with its
// lease's fence ([Options.Fence]) commits only while no other replica has
// taken the lease since, and fails with [ErrLeaseLost] after (or with
// [ErrConflict], for an Update under way at the takeover). [Stats]
// reports no FileSize (there is no file) but DataBytes. [Store.BackupFile]
// copies the hotel, as of one snapshot, into a bbolt state file; backing up
// the database is pg_dump's job. The URL's password and query values never
// appear in an error or in [Store.Path] (see internal/redact).
//
// # What this package is not
//
// It holds no sync logic and talks to nothing but its file or database: it
// does not decide when a ticket is due, what a status means or whether an
// event should be sent. It only stores what the engine tells it, checks that each record is well
// formed, and answers the engine's lookups. Values it returns are copies; none
// aliases the memory-mapped file.
package state
