package sync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/state"
)

// DryRun runs one cycle that writes nothing anywhere: not upstream, not in
// the helpdesk, not in the state file at statePath. The cycle runs against a
// copy of the state file in a private temporary directory (an empty state
// when statePath does not exist yet), removed afterwards, with deps.API and
// deps.Helpdesk wrapped by [NewDryRunAPI] and [NewDryRunHelpdesk]: reads
// pass through, and every write is printed to plan as a line starting with
// "would" and answered with a synthetic result. deps.Store is not used.
//
// The helpdesk's Changes is called only through adapters.Peeker when the
// adapter implements it; an adapter whose Changes writes must.
func DryRun(ctx context.Context, cfg Config, statePath string, deps Deps, plan io.Writer) (Report, error) {
	dir, err := os.MkdirTemp("", "ticketbridge-dry-run-*")
	if err != nil {
		return Report{}, fmt.Errorf("dry run: make temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)
	copyPath := filepath.Join(dir, "state.db")
	if _, err := os.Stat(statePath); err == nil || state.IsURL(statePath) {
		err := state.BackupFile(ctx, statePath, copyPath)
		if err != nil && !(state.IsURL(statePath) && errors.Is(err, state.ErrNotStateFile)) { // a database without this hotel yet: empty state
			return Report{}, fmt.Errorf("dry run: copy state: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Report{}, fmt.Errorf("dry run: %w", err)
	}
	st, err := state.Open(copyPath, state.Options{Logger: deps.Logger, Now: deps.Now})
	if err != nil {
		return Report{}, fmt.Errorf("dry run: open state copy: %w", err)
	}
	defer st.Close()
	pw := &planWriter{w: plan}
	deps.Store = st
	deps.API = NewDryRunAPI(deps.API, pw)
	deps.Helpdesk = NewDryRunHelpdesk(deps.Helpdesk, pw)
	e, err := New(cfg, deps)
	if err != nil {
		return Report{}, err
	}
	rep, err := e.RunCycle(ctx)
	rep.DryRun = true
	if pw.n == 0 && err == nil {
		fmt.Fprintln(plan, "nothing to do: both sides are in step")
	}
	return rep, err
}

// planWriter serialises plan lines from concurrent workers.
type planWriter struct {
	mu gosync.Mutex
	w  io.Writer
	n  int
}

func (p *planWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	return p.w.Write(b)
}

func (p *planWriter) linef(format string, args ...any) {
	fmt.Fprintf(p, "would "+format+"\n", args...)
}

func asPlan(w io.Writer) *planWriter {
	if pw, ok := w.(*planWriter); ok {
		return pw
	}
	return &planWriter{w: w}
}

// excerpt returns s on one line, cut to n runes.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "..."
}

// NewDryRunAPI returns api with its writes replaced: PostMessage and
// SetStatus print a plan line to w and answer as the API would, with a
// message_id derived from the Idempotency-Key. Reads pass through.
func NewDryRunAPI(api API, w io.Writer) API {
	return &dryAPI{API: api, w: asPlan(w)}
}

type dryAPI struct {
	API
	w *planWriter
}

func (d *dryAPI) PostMessage(ctx context.Context, id string, m guestapi.NewMessage, key string) (guestapi.PostMessageResult, error) {
	if err := ctx.Err(); err != nil {
		return guestapi.PostMessageResult{}, err
	}
	what := "an internal note"
	if m.VisibleToGuest {
		what = "a reply the guest sees"
	}
	author := m.AuthorName
	if author == "" {
		author = "API"
	}
	d.w.linef("post %s to ticket %s as %q: %q", what, id, author, excerpt(m.Body, 60))
	return guestapi.PostMessageResult{Success: true, MessageID: uuid.NewSHA1(KeyNamespace, []byte("dry-run\x00"+key)).String()}, nil
}

func (d *dryAPI) SetStatus(ctx context.Context, id string, s guestapi.Status, key string) (guestapi.SetStatusResult, error) {
	if err := ctx.Err(); err != nil {
		return guestapi.SetStatusResult{}, err
	}
	d.w.linef("set the status of ticket %s to %s", id, s)
	return guestapi.SetStatusResult{Success: true, Status: s}, nil
}

// NewDryRunHelpdesk returns hd with its writes replaced: EnsureTicket,
// Append and SetStatus print a plan line to w and answer with synthetic
// results; MarkSent, bookkeeping only, does nothing and prints nothing.
// Lookup passes through, and Changes is answered by PeekChanges when hd
// implements adapters.Peeker (else by Changes). Close closes hd. It does
// not pass adapters.Checker on: a check may write.
func NewDryRunHelpdesk(hd adapters.Helpdesk, w io.Writer) adapters.Helpdesk {
	return &dryHelpdesk{hd: hd, w: asPlan(w)}
}

type dryHelpdesk struct {
	hd adapters.Helpdesk
	w  *planWriter
}

// dryRefPrefix starts the Ref of a helpdesk ticket a dry run would create.
const dryRefPrefix = "dry-run:"

func (d *dryHelpdesk) Name() string { return d.hd.Name() }

func (d *dryHelpdesk) EnsureTicket(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	d.w.linef("create a helpdesk ticket for %s (%s, %s): %q", t.UpstreamID, t.Department, t.Status, excerpt(t.TaskDescription, 60))
	return adapters.Ref(dryRefPrefix + t.UpstreamID), nil
}

func (d *dryHelpdesk) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]adapters.Appended, 0, len(msgs))
	for _, m := range msgs {
		vis := "internal"
		if m.Public {
			vis = "public"
		}
		d.w.linef("append to helpdesk ticket %s: %s message of %s (%s): %q", ref, vis, m.AuthorName, m.AuthorType, excerpt(m.Body, 60))
		out = append(out, adapters.Appended{UpstreamID: m.UpstreamID, HelpdeskID: "dry-run"})
	}
	return out, nil
}

func (d *dryHelpdesk) SetStatus(ctx context.Context, ref adapters.Ref, s guestapi.Status) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d.w.linef("set the status of helpdesk ticket %s to the one %s maps to", ref, s)
	return nil
}

func (d *dryHelpdesk) Changes(ctx context.Context, cursor adapters.Cursor) ([]adapters.Event, adapters.Cursor, error) {
	if p, ok := d.hd.(adapters.Peeker); ok {
		return p.PeekChanges(ctx, cursor)
	}
	return d.hd.Changes(ctx, cursor)
}

func (d *dryHelpdesk) Lookup(ctx context.Context, upstreamID string) (adapters.Found, bool, error) {
	return d.hd.Lookup(ctx, upstreamID)
}

func (d *dryHelpdesk) MarkSent(ctx context.Context, ref adapters.Ref, eventID, msgID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil // bookkeeping only: not worth a plan line
}

func (d *dryHelpdesk) Close() error { return d.hd.Close() }
