package state

import (
	"bytes"
	"errors"
	"testing"
)

// roundTrip checks a decoder on data: it never panics, a failure is a
// *RecordError naming bucket and key, and what decodes re-encodes to bytes
// that decode again to the same encoding.
func roundTrip[T any](t *testing.T, bucket, key string, data []byte, version int, dec func(string, []byte) (T, error)) {
	t.Helper()
	v, err := dec(key, data)
	if err != nil {
		var rerr *RecordError
		if !errors.As(err, &rerr) || rerr.Bucket != bucket || rerr.Key != key || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: error %v is not a *RecordError naming %s/%q", bucket, err, bucket, key)
		}
		return
	}
	enc1, err := encode(version, &v)
	if err != nil {
		t.Fatalf("%s: re-encode %+v: %v", bucket, v, err)
	}
	v2, err := dec(key, enc1)
	if err != nil {
		t.Fatalf("%s: decode of re-encoded %s: %v", bucket, enc1, err)
	}
	enc2, err := encode(version, &v2)
	if err != nil {
		t.Fatalf("%s: re-encode %+v: %v", bucket, v2, err)
	}
	if !bytes.Equal(enc1, enc2) {
		t.Fatalf("%s: encoding is not stable:\n%s\n%s", bucket, enc1, enc2)
	}
}

// FuzzDecodeRecord feeds arbitrary bytes, under an arbitrary key, to every
// record decoder. Seeds live in testdata/fuzz/FuzzDecodeRecord.
func FuzzDecodeRecord(f *testing.F) {
	f.Add("t1", []byte(`{"v":1,"id":"t1","ref":"RT#1","upstream_status":"new","next_due":"2026-03-01T12:00:00Z"}`))
	f.Add("t1/m1", []byte(`{"v":1,"helpdesk_id":"c1","at":"2026-03-01T12:00:00.123456+01:00"}`))
	f.Add("last", []byte(`{"v":1,"start":"2026-03-01T12:00:00Z","outcome":"ok","success":true,"report":{"tickets":[1,2]}}`))
	f.Fuzz(func(t *testing.T, key string, data []byte) {
		roundTrip(t, bucketTickets, key, data, ticketVersion, decodeTicket)
		roundTrip(t, bucketMirrored, key, data, mirroredVersion, mirroredKind.decode)
		roundTrip(t, bucketOwn, key, data, ownVersion, ownKind.decode)
		roundTrip(t, bucketJournal, key, data, entryVersion, decodeEntry)
		roundTrip(t, bucketCursors, key, data, cursorVersion, decodeCursor)
		roundTrip(t, bucketCycles, key, data, cycleVersion, decodeCycle)
	})
}
