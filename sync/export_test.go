package sync

import "context"

// Take takes one of im's slots, as a cycle's import does: a test holds it
// for another hotel.
func (im *Imports) Take(ctx context.Context) (release func(), err error) { return im.acquire(ctx) }
