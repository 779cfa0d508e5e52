package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// --hotel names or every hotel of the directory (see config.Sections). It
// returns nil when the configuration serves one hotel (no
// TICKETBRIDGE_HOTELS_DIR); --hotel is then an error.
func (f hotelFlag) sections(ctx context.Context, src config.Source, main config.Daemon, warn func(string)) ([]hotelSection, error) {
	secs, err := config.Sections(ctx, src, main, f.name, warn)
	if err != nil {
		return nil, hotelUsage(err)
	}
	if secs == nil {
		return nil, nil
	}
	out := make([]hotelSection, len(secs))
	for i, s := range secs {
		out[i] = hotelSection{name: s.Name, conf: s.Conf, err: s.Err}
	}
	return out, nil
}

// one returns the hotel a command on one hotel's state acts on: nil when
// the configuration serves one hotel; with a hotels directory, the one
// --hotel names, which is then required. whose ends the error's request
// for it: "say whose request it is with --hotel NAME".
func (f hotelFlag) one(ctx context.Context, src config.Source, main config.Daemon, warn func(string), command, whose string) (*hotelSection, error) {
	secs, err := f.sections(ctx, src, main, warn)
	if err != nil || secs == nil {
		return nil, err
	}
	if f.name == "" {
		names := make([]string, 0, len(secs))
		for _, s := range secs {
			names = append(names, s.name)
		}
		return nil, fmt.Errorf("%w: %s: this configuration serves many hotels (TICKETBRIDGE_HOTELS_DIR): say %s with --hotel NAME (hotels: %s)", errUsage, command, whose, strings.Join(names, ", "))
	}
	if secs[0].err != nil {
		return nil, fmt.Errorf("hotel %s: %w", secs[0].name, secs[0].err)
	}
	return &secs[0], nil
}

// hotelUsage marks the errors of --hotel (config.ErrNoHotels,
// config.ErrNoSuchHotel) as errors of the command line.
func hotelUsage(err error) error {
	if errors.Is(err, config.ErrNoHotels) || errors.Is(err, config.ErrNoSuchHotel) {
		return fmt.Errorf("%w: %w", errUsage, config.WithFix(err, config.Daemon{}, nil, config.Account{}))
	}
	return err
}

// eachHotel runs do for each section, under a heading when there are
// several, and returns an error of exit status 1 naming the hotels whose
// do failed; of exitPutOff when those that did not sync were all put off
// (once).
func eachHotel(out io.Writer, secs []hotelSection, do func(s hotelSection, out io.Writer) error) error {
	var failed, putOff []string
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
		if err != nil && len(secs) == 1 {
			return err
		}
		if err != nil {
			fmt.Fprintf(out, "hotel %s: %v\n", s.name, err)
			if ee := (*exitError)(nil); errors.As(err, &ee) && ee.code == exitPutOff {
				putOff = append(putOff, s.name)
			} else {
				failed = append(failed, s.name)
			}
		}
	}
	switch {
	case len(failed) > 0:
		msg := fmt.Sprintf("%d of %d hotels failed: %s", len(failed), len(secs), strings.Join(failed, ", "))
		if len(putOff) > 0 {
			msg += fmt.Sprintf("; %d put off: %s", len(putOff), strings.Join(putOff, ", "))
		}
		return &exitError{code: 1, err: errors.New(msg)}
	case len(putOff) > 0:
		return &exitError{code: exitPutOff, err: fmt.Errorf("%d of %d hotels were put off and did not sync: %s; run once again later", len(putOff), len(secs), strings.Join(putOff, ", "))}
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
