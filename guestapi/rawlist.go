package guestapi

import (
	"bytes"
	"hash/maphash"
)

// RawList is an answer of GET /tickets read but not decoded (see
// [Client.ListTicketsRaw]). It holds a pooled read buffer: Release gives
// it back, and nothing of the RawList may be used after.
type RawList struct {
	buf *bytes.Buffer
	r   request
}

// ListDigest identifies a list answer by its bytes: two answers of one
// digest are byte for byte the same, but for a chance of 2⁻⁶⁴. Digests
// are comparable within one process only (their hash is seeded at
// start). The zero ListDigest is no answer's.
type ListDigest struct {
	size int
	sum  uint64
}

// listSeed seeds every ListDigest of the process.
var listSeed = maphash.MakeSeed()

// Digest returns the digest of l's bytes. Hashing an answer costs about a
// hundredth of decoding it.
func (l *RawList) Digest() ListDigest {
	b := l.buf.Bytes()
	return ListDigest{size: len(b) + 1, sum: maphash.Bytes(listSeed, b)}
}

// Tickets decodes l as [Client.ListTickets] does; an answer that does not
// decode is an error matching [ErrBadResponse].
func (l *RawList) Tickets() ([]Ticket, error) {
	ts, err := decodeList(l.buf.Bytes())
	if err != nil {
		return nil, l.r.decodeErr(err)
	}
	return ts, nil
}

// Release gives l's buffer back for reuse. It may be called more than
// once; a nil l is ignored.
func (l *RawList) Release() {
	if l != nil && l.buf != nil {
		putBuffer(l.buf)
		l.buf = nil
	}
}
