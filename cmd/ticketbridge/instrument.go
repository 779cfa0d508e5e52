package main

import (
	"net/http"

	"github.com/ticketbridge/ticketbridge/internal/bridge"
	"github.com/ticketbridge/ticketbridge/internal/telemetry"
)

// instrument returns hc with its transport wrapped so that tel counts
// every request by endpoint template, method and status code. A nil hc
// gets the timeouts guestapi's default client has.
func instrument(tel *telemetry.Telemetry, hc *http.Client) *http.Client {
	if hc == nil {
		hc = bridge.NewAPIClient(4)
	}
	c := *hc
	c.Transport = tel.CountRequests(c.Transport)
	return &c
}
