package refserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ticketbridge/ticketbridge/internal/httpserve"
)

// shutdownGrace is how long Serve lets requests in flight finish once its
// context ended.
const shutdownGrace = 5 * time.Second

// Serve answers HTTP requests on ln with s until ctx ends, then shuts down
// gracefully: it stops accepting, closes the connections that are idle or
// have sent nothing yet, lets the requests in flight finish for up to 5
// seconds, closes what is left, and returns nil. It returns an
// error when serving fails before ctx ends. It closes ln.
//
// The connections are bounded in time, so that a client sending a byte at
// a time cannot hold one for ever; the http.Server's own errors go to the
// server's logger ([Options.Logger]) as warnings.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	httpserve.CloseUnusedOnShutdown(hs)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve reference server: %w", err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shutCtx); err != nil {
		_ = hs.Close()
		<-served
		return fmt.Errorf("shut down reference server: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve reference server: %w", err)
	}
	return nil
}
