package httpserve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/testutil"
)

// A connection that never sent a request does not hold Shutdown up, and
// is closed: on its own, net/http counts it busy for five seconds.
func TestShutdownClosesAConnectionThatSentNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := testutil.NewPipeListener()
		hs := &http.Server{Handler: http.NotFoundHandler()}
		CloseUnusedOnShutdown(hs)
		served := make(chan error, 1)
		go func() { served <- hs.Serve(ln) }()

		client, err := ln.Dial(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		synctest.Wait() // accepted, and waiting for a request

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown with a connection that sent nothing: %v", err)
			hs.Close()
		}
		if n, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("the connection after Shutdown: read %d bytes, %v; want it closed", n, err)
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
}
