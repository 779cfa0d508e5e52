package sync

import "context"

// Take takes room for an import of reads reads at once, as a cycle's
// import does: a test holds it for another hotel.
func (im *Imports) Take(ctx context.Context, reads int) (release func(), err error) {
	return im.acquire(ctx, reads)
}
