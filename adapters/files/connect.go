package files

import (
	"context"
	"fmt"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Connect stores t's upstream id in the ticket.json of folder ref, one
// made by hand (see adapters.Connector); the thread is rendered again.
func (a *Adapter) Connect(ctx context.Context, ref adapters.Ref, t adapters.Ticket) error {
	if err := a.writable("connect"); err != nil {
		return err
	}
	if strings.TrimSpace(t.UpstreamID) == "" {
		return fmt.Errorf("connect folder %s: upstream id is empty: %w", ref, adapters.ErrInvalid)
	}
	err := a.do(ctx, func() error {
		tk, err := a.load(ref)
		if err != nil {
			return err
		}
		switch {
		case tk.UpstreamID == t.UpstreamID:
			return nil
		case tk.UpstreamID != "":
			return fmt.Errorf("it mirrors request %s: %w", tk.UpstreamID, adapters.ErrInvalid)
		}
		other, err := a.find(t.UpstreamID)
		if err != nil {
			return err
		}
		if other != nil {
			return fmt.Errorf("folder %s mirrors that request: %w", other.Folder, adapters.ErrInvalid)
		}
		tk.UpstreamID = t.UpstreamID
		if err := a.save(tk); err != nil {
			return err
		}
		a.index[t.UpstreamID] = ref
		return nil
	})
	if err != nil {
		return fmt.Errorf("connect folder %s to request %s: %w", ref, t.UpstreamID, err)
	}
	return nil
}
