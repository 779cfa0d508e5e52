package hmacsig_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/hmacsig"
)

// The vector is computed independently (Python's hmac module), so a change
// of the scheme that keeps Sign and Verify consistent with each other is
// still caught.
func TestSignKnownVector(t *testing.T) {
	got := hmacsig.Sign("whsec-example-0123456789abcdef", 1773480413, []byte(`{"id":"x","type":"ping"}`))
	want := "sha256=30b66e1c1187f759b6f3fedbf9a9d7cdb89a61b6dbb2d740aad8fc5344b78446"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	const secret = "a-secret-of-enough-length"
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"e1","type":"reply"}`)
	ts := now.Unix()
	sig := hmacsig.Sign(secret, ts, body)
	tsText := strconv.FormatInt(ts, 10)

	cases := []struct {
		name     string
		secret   string
		ts, sig  string
		body     []byte
		now      time.Time
		tol      time.Duration
		wantErr  error
		wantText string
	}{
		{name: "good", secret: secret, ts: tsText, sig: sig, body: body, now: now},
		{name: "good at the edge of the tolerance", secret: secret, ts: tsText, sig: sig, body: body, now: now.Add(5 * time.Minute)},
		{name: "good a little ahead", secret: secret, ts: tsText, sig: sig, body: body, now: now.Add(-time.Minute)},
		{name: "tampered body", secret: secret, ts: tsText, sig: sig, body: []byte(`{"id":"e1","type":"note"}`), now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "wrong secret", secret: "another-secret-of-length", ts: tsText, sig: sig, body: body, now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "timestamp changed", secret: secret, ts: strconv.FormatInt(ts+1, 10), sig: sig, body: body, now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "replayed later", secret: secret, ts: tsText, sig: sig, body: body, now: now.Add(5*time.Minute + time.Second), wantErr: hmacsig.ErrStale, wantText: "behind"},
		{name: "from the future", secret: secret, ts: tsText, sig: sig, body: body, now: now.Add(-6 * time.Minute), wantErr: hmacsig.ErrStale, wantText: "ahead"},
		{name: "custom tolerance", secret: secret, ts: tsText, sig: sig, body: body, now: now.Add(31 * time.Second), tol: 30 * time.Second, wantErr: hmacsig.ErrStale},
		{name: "very old", secret: secret, ts: "1", sig: hmacsig.Sign(secret, 1, body), body: body, now: now, wantErr: hmacsig.ErrStale},
		{name: "smallest timestamp", secret: secret, ts: "-9223372036854775808", sig: sig, body: body, now: now, wantErr: hmacsig.ErrStale},
		{name: "huge timestamp", secret: secret, ts: "9223372036854775807", sig: sig, body: body, now: now, wantErr: hmacsig.ErrStale},
		{name: "no timestamp", secret: secret, ts: "", sig: sig, body: body, now: now, wantErr: hmacsig.ErrStale, wantText: "missing"},
		{name: "timestamp not a number", secret: secret, ts: "yesterday", sig: sig, body: body, now: now, wantErr: hmacsig.ErrStale},
		{name: "no signature", secret: secret, ts: tsText, sig: "", body: body, now: now, wantErr: hmacsig.ErrBadSignature, wantText: "missing"},
		{name: "no prefix", secret: secret, ts: tsText, sig: strings.TrimPrefix(sig, "sha256="), body: body, now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "other algorithm", secret: secret, ts: tsText, sig: "sha1=" + strings.TrimPrefix(sig, "sha256="), body: body, now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "not hex", secret: secret, ts: tsText, sig: "sha256=zz", body: body, now: now, wantErr: hmacsig.ErrBadSignature},
		{name: "truncated", secret: secret, ts: tsText, sig: sig[:len(sig)-2], body: body, now: now, wantErr: hmacsig.ErrBadSignature},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := hmacsig.Verify(c.secret, c.ts, c.sig, c.body, c.now, c.tol)
			if c.wantErr == nil {
				if err != nil {
					t.Fatalf("Verify: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("Verify: %v, want %v", err, c.wantErr)
			}
			if c.wantText != "" && !strings.Contains(err.Error(), c.wantText) {
				t.Errorf("error %q does not say %q", err, c.wantText)
			}
			for _, leak := range []string{c.secret, strings.TrimPrefix(hmacsig.Sign(c.secret, ts, c.body), "sha256=")} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error %q contains the secret or the expected signature", err)
				}
			}
		})
	}
}

func TestReadVerified(t *testing.T) {
	const secret = "a-secret-of-enough-length"
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"hello":"world"}`)
	req := httptest.NewRequest("POST", "/events", bytes.NewReader(body))
	hmacsig.SetSignature(req.Header, secret, now, body)
	got, err := hmacsig.ReadVerified(req, secret, now, 0, 1024)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("ReadVerified = %q, %v; want the body", got, err)
	}

	req = httptest.NewRequest("POST", "/events", bytes.NewReader(body))
	hmacsig.SetSignature(req.Header, secret, now, body)
	if _, err := hmacsig.ReadVerified(req, secret, now, 0, int64(len(body)-1)); !errors.Is(err, hmacsig.ErrTooLarge) {
		t.Fatalf("ReadVerified over the limit: %v, want ErrTooLarge", err)
	}

	req = httptest.NewRequest("POST", "/events", bytes.NewReader(body))
	hmacsig.SetSignature(req.Header, "not-the-secret-at-all", now, body)
	if got, err := hmacsig.ReadVerified(req, secret, now, 0, 1024); !errors.Is(err, hmacsig.ErrBadSignature) || got != nil {
		t.Fatalf("ReadVerified with a bad signature = %q, %v; want no body and ErrBadSignature", got, err)
	}
}
