package notify

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
)

// Key names a condition: a hotel, a kind and what within the hotel ("" for
// the hotel as a whole; a request, a file).
type Key struct {
	Hotel   string
	Kind    Kind
	Subject string
}

// String is "hotel=a kind=api-key-refused", with " subject=…" when set.
func (k Key) String() string {
	s := "hotel=" + k.Hotel + " kind=" + string(k.Kind)
	if k.Subject != "" {
		s += " subject=" + k.Subject
	}
	return s
}

// Episode is what the journal keeps of a condition between its first
// report and its last notice.
type Episode struct {
	Key
	// Version counts the episode's writes; [Journal.Put] stores a version
	// only over the one before it.
	Version uint64
	// Since is when the condition started holding.
	Since time.Time
	// Cause and Fix are the last reported.
	Cause, Fix string
	// Fired tells that the first notice was decided; Count how many
	// notices were, and LastAt when the last one was.
	Fired  bool
	Count  int
	LastAt time.Time
	// Resolved tells that the condition ended after it had fired.
	Resolved bool
	// Pending is the phase of a notice decided and not yet marked sent
	// ("" for none), PendingAt when it was decided.
	Pending   Phase
	PendingAt time.Time
}

// Journal keeps the episodes, so that a restart or another replica
// neither repeats a notice nor loses one. The state store implements it
// (bbolt, PostgreSQL); [MemJournal] is one in memory.
//
// A journal may forget an episode that is Resolved with no Pending
// notice: a new episode of the same key then starts at version 1.
type Journal interface {
	// Get returns the stored episode of k; ok is false when there is none.
	Get(ctx context.Context, k Key) (ep Episode, ok bool, err error)
	// Put stores ep when the stored episode of ep.Key has the version
	// prev (0: none is stored), and reports whether it did. A false ok
	// means another writer got there first: the caller leaves the
	// episode to it.
	Put(ctx context.Context, ep Episode, prev uint64) (ok bool, err error)
	// Open returns the hotel's episodes that are not Resolved.
	Open(ctx context.Context, hotel string) ([]Episode, error)
	// Unsent returns the episodes with a Pending notice decided before
	// before.
	Unsent(ctx context.Context, before time.Time) ([]Episode, error)
}

// MemJournal is a [Journal] in memory, safe for concurrent use: for
// tests, and for a daemon whose store keeps no episodes (a restart then
// forgets them). The zero value is empty and ready.
type MemJournal struct {
	mu sync.Mutex
	m  map[Key]Episode
}

var _ Journal = (*MemJournal)(nil)

func (j *MemJournal) Get(_ context.Context, k Key) (Episode, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	ep, ok := j.m[k]
	return ep, ok, nil
}

func (j *MemJournal) Put(_ context.Context, ep Episode, prev uint64) (bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m[ep.Key].Version != prev {
		return false, nil
	}
	if j.m == nil {
		j.m = map[Key]Episode{}
	}
	if ep.Resolved && ep.Pending == "" {
		delete(j.m, ep.Key)
		return true, nil
	}
	j.m[ep.Key] = ep
	return true, nil
}

func (j *MemJournal) Open(_ context.Context, hotel string) ([]Episode, error) {
	return j.list(func(ep Episode) bool { return ep.Hotel == hotel && !ep.Resolved }), nil
}

func (j *MemJournal) Unsent(_ context.Context, before time.Time) ([]Episode, error) {
	return j.list(func(ep Episode) bool { return ep.Pending != "" && ep.PendingAt.Before(before) }), nil
}

// All returns every stored episode, sorted by key.
func (j *MemJournal) All() []Episode { return j.list(func(Episode) bool { return true }) }

func (j *MemJournal) list(keep func(Episode) bool) []Episode {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []Episode
	for _, ep := range j.m {
		if keep(ep) {
			out = append(out, ep)
		}
	}
	sort.Slice(out, func(a, b int) bool { return strings.Compare(out[a].String(), out[b].String()) < 0 })
	return out
}
