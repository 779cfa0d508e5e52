package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// hotelFlag is --hotel of the commands that act on hotels: once, status,
// check and state backup, and retry and skip, which require it with a
// hotels directory (see runAction).
type hotelFlag struct{ name string }

func (f *hotelFlag) register(fs interface {
	StringVar(p *string, name, value, usage string)
}) {
	fs.StringVar(&f.name, "hotel", "", "with TICKETBRIDGE_HOTELS_DIR, the hotel `NAME` only; without it every hotel, one section each")
}

// hotelSection is one hotel a command acts on: its configuration, or the
// error that its configuration is.
type hotelSection struct {
	name string
	conf config.Hotel
	err  error
}

// sections returns the hotels a command acts on, in name order: the one
// --hotel names or every hotel of the directory. It returns nil when the
// configuration serves one hotel (no TICKETBRIDGE_HOTELS_DIR); --hotel is
// then an error.
func (f hotelFlag) sections(ctx context.Context, src config.Source, main config.Daemon, warn func(string)) ([]hotelSection, error) {
	hc, err := config.LoadHotels(ctx, src.Env)
	if err != nil {
		return nil, src.Explain(err)
	}
	if hc.Dir == "" {
		if f.name != "" {
			return nil, fmt.Errorf("%w: %w", errUsage, errNoHotels)
		}
		return nil, nil
	}
	good, bad, err := config.LoadHotelDir(ctx, src, main, hc.Dir, warn)
	if err != nil {
		return nil, err
	}
	var out []hotelSection
	for _, h := range good {
		out = append(out, hotelSection{name: h.Name(), conf: h})
	}
	for n, err := range bad {
		out = append(out, hotelSection{name: n, err: err})
	}
	slices.SortFunc(out, func(a, b hotelSection) int { return strings.Compare(a.name, b.name) })
	if f.name == "" {
		if len(out) == 0 {
			return nil, fmt.Errorf("the hotels directory %s holds no hotel (<name>%s)", hc.Dir, config.HotelSuffix)
		}
		return out, nil
	}
	names := make([]string, 0, len(out))
	for _, s := range out {
		if s.name == f.name {
			return []hotelSection{s}, nil
		}
		names = append(names, s.name)
	}
	return nil, fmt.Errorf("%w: --hotel %s: no such hotel in %s (hotels: %s)", errUsage, f.name, hc.Dir, strings.Join(names, ", "))
}

// eachHotel runs do for each section, under a heading when there are
// several, and returns an error of exit status 1 naming the hotels whose
// do failed.
func eachHotel(out io.Writer, secs []hotelSection, do func(s hotelSection, out io.Writer) error) error {
	var failed []string
	for i, s := range secs {
		if len(secs) > 1 {
			if i > 0 {
				fmt.Fprintln(out)
			}
			fmt.Fprintf(out, "== hotel %s ==\n", s.name)
		}
		err := s.err
		if err == nil {
			err = do(s, out)
		}
		if errors.Is(err, sync.ErrInterrupted) {
			return err // the hotels after it are not started
		}
		if err != nil {
			failed = append(failed, s.name)
			if len(secs) > 1 {
				fmt.Fprintf(out, "hotel %s: %v\n", s.name, err)
			} else {
				return err
			}
		}
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d hotels failed: %s", len(failed), len(secs), strings.Join(failed, ", "))}
	}
	return nil
}

// eachHotelJSON prints one JSON object of every hotel's JSON output by
// name, or the one hotel's output as it is.
func eachHotelJSON(out io.Writer, secs []hotelSection, do func(s hotelSection, out io.Writer) error) error {
	if len(secs) == 1 {
		if secs[0].err != nil {
			return secs[0].err
		}
		return do(secs[0], out)
	}
	all := map[string]any{}
	var failed []string
	for _, s := range secs {
		err := s.err
		var b bytes.Buffer
		if err == nil {
			err = do(s, &b)
		}
		if err != nil {
			failed = append(failed, s.name)
			all[s.name] = map[string]string{"error": err.Error()}
			continue
		}
		all[s.name] = json.RawMessage(b.Bytes())
	}
	if err := printJSON(out, all); err != nil {
		return err
	}
	if len(failed) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d of %d hotels failed: %s", len(failed), len(secs), strings.Join(failed, ", "))}
	}
	return nil
}

// errNoHotels is the error of --hotel without a hotels directory.
var errNoHotels = errors.New("--hotel needs TICKETBRIDGE_HOTELS_DIR: this configuration serves one hotel")
