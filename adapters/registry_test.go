package adapters_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/memory"
)

func TestRegistryNamesSorted(t *testing.T) {
	r := adapters.Registry{"zammad": nil, "files": nil, "rt": nil, "memory": nil}
	if got, want := r.Names(), []string{"files", "memory", "rt", "zammad"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	if got := (adapters.Registry{}).Names(); len(got) != 0 {
		t.Fatalf("empty registry: Names() = %v", got)
	}
}

func TestRegistryOpenUnknownListsKnown(t *testing.T) {
	r := adapters.Registry{"memory": memory.Factory(memory.NewBackend()), "files": nil}
	_, err := r.Open(t.Context(), "zendesk", adapters.Deps{})
	if !errors.Is(err, adapters.ErrUnknownAdapter) {
		t.Fatalf("Open(zendesk) = %v, want ErrUnknownAdapter", err)
	}
	for _, want := range []string{`"zendesk"`, "files, memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := (adapters.Registry{}).Open(t.Context(), "", adapters.Deps{}); !errors.Is(err, adapters.ErrUnknownAdapter) || !strings.Contains(err.Error(), "none registered") {
		t.Errorf("empty registry: %v", err)
	}
}

func TestRegistryOpenFillsDeps(t *testing.T) {
	var got adapters.Deps
	r := adapters.Registry{"memory": func(ctx context.Context, deps adapters.Deps) (adapters.Helpdesk, error) {
		got = deps
		return memory.Factory(memory.NewBackend())(ctx, deps)
	}}
	h, err := r.Open(t.Context(), "memory", adapters.Deps{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer h.Close()
	if h.Name() != "memory" {
		t.Fatalf("Name() = %q", h.Name())
	}
	if got.Logger == nil || got.Env == nil {
		t.Fatalf("Open handed the factory nil Logger or Env: %+v", got)
	}
	if _, ok := got.Env.Lookup("HOME"); ok {
		t.Error("a nil Env must find no variable, not the process environment")
	}
	got.Logger.Info("discarded") // must not panic
}

type named struct {
	adapters.Helpdesk
	name   string
	closed bool
}

func (n *named) Name() string { return n.name }
func (n *named) Close() error { n.closed = true; return nil }

func TestRegistryOpenRejectsMisnamedAdapter(t *testing.T) {
	h := &named{name: "zendesk"}
	r := adapters.Registry{"rt": func(context.Context, adapters.Deps) (adapters.Helpdesk, error) { return h, nil }}
	if _, err := r.Open(t.Context(), "rt", adapters.Deps{}); err == nil || !strings.Contains(err.Error(), `"zendesk"`) {
		t.Fatalf("Open of a misnamed adapter: %v", err)
	}
	if !h.closed {
		t.Error("the misnamed adapter was not closed")
	}
}

func TestRegistryOpenWrapsFactoryError(t *testing.T) {
	boom := errors.New("TICKETBRIDGE_RT_URL is not a URL")
	r := adapters.Registry{"rt": func(context.Context, adapters.Deps) (adapters.Helpdesk, error) { return nil, boom }}
	_, err := r.Open(t.Context(), "rt", adapters.Deps{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `open adapter "rt"`) {
		t.Fatalf("Open = %v, want the factory's error wrapped", err)
	}
	r = adapters.Registry{"rt": func(context.Context, adapters.Deps) (adapters.Helpdesk, error) { return nil, nil }}
	if _, err := r.Open(t.Context(), "rt", adapters.Deps{}); err == nil {
		t.Fatal("Open accepted a factory that returned no adapter")
	}
}
