package refserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

// exchange trades key for an access token.
func exchange(t *testing.T, ts *refservertest.TestServer, key string) string {
	t.Helper()
	a := do(t, ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + key + `"}`})
	var tok guestapi.AccessToken
	if err := json.Unmarshal(a.body, &tok); err != nil || a.status != 200 {
		t.Fatalf("exchange: %d %s", a.status, a.body)
	}
	return tok.AccessToken
}

func noTokenLimit() refservertest.Option {
	return refservertest.WithOptions(refserver.Options{ConsoleToken: "c", TokenRateLimit: refserver.RateLimit{Requests: -1}})
}

func TestTokenExchangeAndVerify(t *testing.T) {
	f := newFixture(t, noTokenLimit())
	k := f.ts.Keys
	for _, c := range []struct {
		name, key string
		scopes    []string
	}{
		{"platform read", k.PlatformRead, []string{"read"}},
		{"platform write", k.PlatformWrite, []string{"read", "write"}},
		{"platform admin", k.PlatformAdmin, []string{"read", "write"}},
		{"tickets write, platform read", k.TicketsWrite, []string{"read"}},
	} {
		a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + c.key + `"}`})
		var tok guestapi.AccessToken
		if err := json.Unmarshal(a.body, &tok); err != nil || a.status != 200 {
			t.Fatalf("%s: %d %s", c.name, a.status, a.body)
		}
		if tok.TokenType != "Bearer" || tok.ExpiresIn != 3600 || !slices.Equal(tok.Scopes, c.scopes) || tok.ProductType != "hotel" || tok.AccessToken == "" {
			t.Errorf("%s: token %s", c.name, a.body)
		}
		if strings.HasPrefix(tok.AccessToken, "rta_") {
			t.Errorf("%s: a token looks like a key", c.name)
		}
		v := do(t, f.ts, req{method: "POST", path: "/api-auth/verify", key: tok.AccessToken})
		var ver guestapi.Verification
		if err := json.Unmarshal(v.body, &ver); err != nil || v.status != 200 {
			t.Fatalf("%s: verify %d %s", c.name, v.status, v.body)
		}
		if ver.Organization != f.ts.Org || !slices.Equal(ver.Scopes, c.scopes) || ver.ProductType != "hotel" ||
			!ver.ExpiresAt.Equal(start.Truncate(time.Microsecond).Add(time.Hour)) {
			t.Errorf("%s: verification %s", c.name, v.body)
		}
		var raw map[string]any
		_ = json.Unmarshal(v.body, &raw)
		if s, _ := raw["expires_at"].(string); !tsRE.MatchString(s) {
			t.Errorf("expires_at %q is not in the spec's form", s)
		}
	}
	a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + k.TicketsNone + `"}`})
	if a.status != 403 || a.json(t)["need"] != "read" {
		t.Errorf("platform none: %d %s, want 403 need read", a.status, a.body)
	}
	for name, body := range map[string]string{
		"unknown": `{"api_key":"rta_nope"}`, "revoked": `{"api_key":"` + k.Revoked + `"}`, "expired": `{"api_key":"` + k.Expired + `"}`,
		"missing": `{}`, "empty body": ``, "not a key": `{"api_key":"abc"}`,
	} {
		a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: body})
		if a.status != 401 || a.errorCode(t) != "unauthorized" {
			t.Errorf("%s: %d %s, want 401", name, a.status, a.body)
		}
	}
	if a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":`}); a.status != 400 {
		t.Errorf("malformed: %d", a.status)
	}
	// Service endpoints refuse raw keys; nothing refuses quietly.
	for name, h := range map[string]map[string]string{
		"raw key": {"Authorization": "Bearer " + k.PlatformAdmin}, "missing": {}, "unknown token": {"Authorization": "Bearer rtt_x"},
	} {
		a := do(t, f.ts, req{method: "POST", path: "/api-auth/verify", header: h})
		if a.status != 401 {
			t.Errorf("verify with %s: %d", name, a.status)
		}
	}
}

func TestTokenExpiryAndRevocation(t *testing.T) {
	f := newFixture(t, noTokenLimit())
	tok := exchange(t, f.ts, f.ts.Keys.PlatformWrite)
	verify := func() int { return do(t, f.ts, req{method: "POST", path: "/api-auth/verify", key: tok}).status }
	f.clock.Advance(time.Hour - time.Microsecond)
	if got := verify(); got != 200 {
		t.Fatalf("before expiry: %d", got)
	}
	f.clock.Advance(time.Microsecond)
	if got := verify(); got != 401 {
		t.Fatalf("after 1 h: %d, want 401", got)
	}
	tok = exchange(t, f.ts, f.ts.Keys.PlatformWrite)
	if got := verify(); got != 200 {
		t.Fatalf("new token: %d", got)
	}
	if err := f.ts.Server.RevokeKey(f.ts.Org, "platform-write"); err != nil {
		t.Fatal(err)
	}
	if got := verify(); got != 401 {
		t.Fatalf("token of a revoked key: %d, want 401", got)
	}
}

func TestTokenExchangeLimit(t *testing.T) {
	f := newFixture(t)
	for i := range 10 {
		if a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + f.ts.Keys.PlatformRead + `"}`}); a.status != 200 {
			t.Fatalf("exchange %d: %d", i+1, a.status)
		}
		f.clock.Advance(time.Second)
	}
	a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + f.ts.Keys.PlatformRead + `"}`})
	if a.status != 429 || a.errorCode(t) != "rate_limited" || a.header.Get("Retry-After") != "50" {
		t.Fatalf("11th within a minute: %d Retry-After %q %s, want 429 after 50 s", a.status, a.header.Get("Retry-After"), a.body)
	}
	// Verify and the ticket endpoints are not limited by it.
	if a := do(t, f.ts, req{method: "GET", path: "/ops-public-api/v1/tickets", key: f.ts.Keys.TicketsRead}); a.status != 200 {
		t.Errorf("tickets during the token limit: %d", a.status)
	}
	f.clock.Advance(50 * time.Second)
	if a := do(t, f.ts, req{method: "POST", path: "/api-auth/token", body: `{"api_key":"` + f.ts.Keys.PlatformRead + `"}`}); a.status != 200 {
		t.Errorf("once the first left the window: %d", a.status)
	}
}
