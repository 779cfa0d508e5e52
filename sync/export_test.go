package sync

import "context"

// Take takes room for an import of reads reads at once, as a cycle's
// import does: a test holds it for another hotel.
func (im *Imports) Take(ctx context.Context, reads int) (release func(), err error) {
	return im.acquire(ctx, reads)
}

// SameLists counts the cycles of e whose lists were, byte for byte, the
// last ones, and so were not decoded.
func (e *Engine) SameLists() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sameLists
}
