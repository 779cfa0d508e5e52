package webhook_test

import (
	"bytes"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters/webhook"
)

func TestSignRequestNeedsRereadableBody(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"a":1}`)
	req := httptest.NewRequest("POST", "http://x/events", bytes.NewReader(body))
	req.GetBody = nil // httptest does not set it; http.NewRequest does
	if err := webhook.SignRequest(req, "a-secret-of-enough-length", now); err == nil {
		t.Fatal("SignRequest of a one-shot body succeeded; the signature would not cover it")
	}
}
