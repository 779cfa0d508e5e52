package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/guestapi"
)

// errNameTaken says that a folder of the name chosen appeared before the
// new folder could take it.
var errNameTaken = errors.New("the folder's name was taken meanwhile")

// ensure returns the folder mirroring t.UpstreamID, creating it when there
// is none. The adapter's turn (see do) is taken twice: to look the ticket
// up and choose a free name, and to look again and rename the new folder
// into place. In between, outside it, the folder is built under a hidden
// name with its files synced, so that the syncs of tickets created at once
// overlap instead of taking turns. A ticket made meanwhile for the same
// upstream id, by this process or another, is returned instead.
func (a *Adapter) ensure(ctx context.Context, t adapters.Ticket) (adapters.Ref, error) {
	for attempt := 0; ; attempt++ {
		var ref adapters.Ref
		var name, tmp string
		err := a.do(ctx, func() error {
			found, err := a.find(t.UpstreamID)
			if err != nil || found != nil {
				if found != nil {
					ref = adapters.Ref(found.Folder)
				}
				return err
			}
			name, tmp, err = a.reserve(t)
			return err
		})
		if err != nil || ref != "" {
			return ref, err
		}
		err = a.build(t, name, tmp)
		if err == nil {
			err = a.do(ctx, func() error {
				found, err := a.find(t.UpstreamID)
				if err != nil || found != nil {
					if found != nil {
						ref = adapters.Ref(found.Folder)
					}
					return err
				}
				return a.place(t.UpstreamID, tmp, name)
			})
		}
		a.mu.Lock()
		delete(a.reserved, name)
		if err != nil || ref != "" {
			a.unbuild(tmp)
		}
		a.mu.Unlock()
		switch {
		case errors.Is(err, errNameTaken) && attempt < 100:
			continue // try the next free name
		case err != nil:
			return "", err
		case ref == "":
			ref = adapters.Ref(name)
		}
		return ref, nil
	}
}

// reserve returns the first of t's folder names (see folderNames) that no
// folder has and no folder being built took, and takes it; and the hidden
// folder, made now, to build it in. Made in the adapter's turn, the hidden
// folder counts as the adapter's own change of the tickets folder (see
// scan).
func (a *Adapter) reserve(t adapters.Ticket) (name, tmp string, err error) {
	root := filepath.Join(a.dir, ticketsDir)
	tickets, err := a.sub(ticketsDir)
	if err != nil {
		return "", "", fmt.Errorf("create ticket folder: %w", err)
	}
	defer tickets.Close()
	fresh := a.scanFresh(root) // nobody else changed the folder since the last scan
	tmp = newPrefix + randomSuffix()
	if err := tickets.Mkdir(tmp, dirMode); err != nil {
		return "", "", fmt.Errorf("create ticket folder: %w", err)
	}
	a.restamp(root, fresh)
	names := folderNames(t)
	for i := 0; ; i++ {
		name = names[min(i, len(names)-1)]
		if i >= len(names) {
			name += "-" + strconv.Itoa(i-len(names)+2)
		}
		if there, err := tickets.Exists(name); err == nil && there || a.reserved[name] {
			continue
		}
		a.reserved[name] = true
		return name, tmp, nil
	}
}

// build writes t's folder in the hidden folder tmp (of tickets/), as folder name: both
// files and the folder synced, so that once renamed it never appears
// without its ticket.json. It runs outside the adapter's turn and writes
// nothing another writer reads, but asks the guard first.
func (a *Adapter) build(t adapters.Ticket, name, tmp string) error {
	if a.guard != nil {
		if err := a.guard(); err != nil {
			return err
		}
	}
	status := t.Status
	if status == "" {
		status = guestapi.StatusNew
	}
	tf := &ticketFile{
		Folder: name, UpstreamID: t.UpstreamID, Department: t.Department, Status: a.status.Down(status),
		TaskDescription: t.TaskDescription, Origin: string(t.Origin), Comments: t.Comments,
		GuestRating: t.GuestRating, CreatedAt: t.CreatedAt.UTC(), UpdatedAt: t.UpdatedAt.UTC(),
		Thread: []entry{}, Sent: []sentRecord{},
	}
	b, err := encodeTicket(tf)
	if err != nil {
		return err
	}
	dir, err := a.sub(filepath.Join(ticketsDir, tmp))
	if err != nil {
		return err
	}
	defer dir.Close()
	if err := dir.Replace(ticketJSON, b, fileMode); err != nil {
		return err
	}
	if err := dir.Replace(threadMD, renderThread(tf, a.status.FromHelpdesk), fileMode); err != nil {
		return err
	}
	return dir.Sync()
}

// unbuild removes the hidden folder tmp of a folder not put in place, as
// the adapter's own change of the tickets folder. a.mu is held.
func (a *Adapter) unbuild(tmp string) {
	root := filepath.Join(a.dir, ticketsDir)
	fresh := a.scanFresh(root)
	if tickets, err := a.sub(ticketsDir); err == nil {
		_ = tickets.RemoveAll(tmp)
		tickets.Close()
	}
	a.restamp(root, fresh)
}

// place renames the folder built at tmp into place as name, in the
// adapter's turn; the tickets folder's sync is left to Flush.
func (a *Adapter) place(upstreamID, tmp, name string) error {
	root := filepath.Join(a.dir, ticketsDir)
	tickets, err := a.sub(ticketsDir)
	if err != nil {
		return fmt.Errorf("create ticket folder %s: %w", name, err)
	}
	defer tickets.Close()
	fresh := a.scanFresh(root) // nobody else changed the folder since the last scan
	if err := tickets.Move(tmp, tickets, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errNameTaken
		}
		return fmt.Errorf("create ticket folder %s: %w", name, err)
	}
	a.pending[root] = true // the folder's name: synced by Flush
	a.index[upstreamID] = adapters.Ref(name)
	a.scanned[name] = true
	a.restamp(root, fresh) // the change is our own: a whole scan stays whole
	a.log.Info("created ticket folder", slog.String("op", "ensure"), slog.String("ticket", upstreamID), slog.String("folder", name))
	return nil
}
