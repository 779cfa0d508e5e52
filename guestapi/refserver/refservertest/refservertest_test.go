package refservertest_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
)

func TestNew(t *testing.T) {
	clock := refservertest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	ts := refservertest.New(t, refservertest.WithClock(clock))
	if ts.BaseURL != ts.URL+"/ops-public-api/v1" || ts.Org == ts.OtherOrg {
		t.Fatalf("addresses %q %q", ts.URL, ts.BaseURL)
	}
	status := func(key string) int {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", ts.BaseURL+"/tickets", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for name, c := range map[string]struct {
		key  string
		want int
	}{
		"tickets write": {ts.Keys.TicketsWrite, 200}, "tickets read": {ts.Keys.TicketsRead, 200},
		"admin": {ts.Keys.TicketsNoneAdmin, 403}, "expired": {ts.Keys.Expired, 401}, "revoked": {ts.Keys.Revoked, 401},
		"other org": {ts.Keys.OtherTicketsWrite, 200},
	} {
		if got := status(c.key); got != c.want {
			t.Errorf("%s: %d, want %d", name, got, c.want)
		}
	}
	if err := clock.Sleep(context.Background(), time.Hour); err != nil || clock.Now().Hour() != 4 {
		t.Errorf("Sleep did not advance the clock: %v %v", err, clock.Now())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := clock.Sleep(ctx, time.Hour); err == nil {
		t.Errorf("Sleep ignored an ended context")
	}
}
