package sync_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	tbsync "github.com/ticketbridge/ticketbridge/sync"
)

// TestMessageWithoutTextIsMirrored: a guest message whose text is empty (a
// photo alone: the API returns no attachments) reaches the helpdesk as a
// placeholder and does not stick the ticket on a refused append.
func TestMessageWithoutTextIsMirrored(t *testing.T) {
	e := newEnv(t)
	id := e.newTicket("photo of the broken lamp")
	path := "/ops-public-api/v1/tickets/" + id
	e.ts.Server.SetHook(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method != http.MethodGet || r.URL.Path != path {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}}
		next.ServeHTTP(rec, r)
		var th map[string]json.RawMessage
		if err := json.Unmarshal(rec.body.Bytes(), &th); err != nil {
			t.Errorf("decode thread: %v", err)
		}
		var msgs []map[string]any
		if err := json.Unmarshal(th["messages"], &msgs); err != nil {
			t.Errorf("decode messages: %v", err)
		}
		for _, m := range msgs {
			m["body"] = ""
		}
		th["messages"], _ = json.Marshal(msgs)
		out, _ := json.Marshal(th)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.code)
		w.Write(out)
	})
	rep := e.cycle()
	if len(rep.Failures) != 0 {
		t.Fatalf("cycle failures: %+v", rep.Failures)
	}
	msgs := e.backend.Messages(e.ref(id))
	if len(msgs) == 0 {
		t.Fatal("the message without text was not mirrored")
	}
	for _, m := range msgs {
		if !strings.Contains(m.Text(), tbsync.NoTextPlaceholder) {
			t.Fatalf("mirrored message %q lacks the placeholder", m.Text())
		}
	}
}

type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(code int)        { r.code = code }
