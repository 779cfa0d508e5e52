package config

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Section is one hotel a command acts on: its configuration, or the
// error that its file is.
type Section struct {
	Name string
	Conf Hotel
	Err  error
}

// ErrNoHotels is the error of a hotel named (a command's --hotel) where
// the configuration serves one hotel; its fix is the table's (NoHotels).
var ErrNoHotels = errors.New("this configuration serves one hotel")

// ErrNoSuchHotel marks a hotel named (a command's --hotel) that the
// hotels directory does not hold.
var ErrNoSuchHotel = errors.New("no such hotel")

// Sections returns the hotels a command acts on, in name order: the one
// name names or, when it is empty, every hotel of the directory. It
// returns nil when the configuration serves one hotel (no
// TICKETBRIDGE_HOTELS_DIR); a name is then ErrNoHotels. ErrNoHotels and
// ErrNoSuchHotel are errors of the command line; the others, of the
// configuration.
func Sections(ctx context.Context, src Source, main Daemon, name string, warn func(string)) ([]Section, error) {
	hc, err := LoadHotels(ctx, src.Env)
	if err != nil {
		return nil, src.Explain(err)
	}
	if hc.Dir == "" {
		if name != "" {
			return nil, ErrNoHotels
		}
		return nil, nil
	}
	good, bad, err := LoadHotelDir(ctx, src, main, hc.Dir, warn)
	if err != nil {
		return nil, err
	}
	var out []Section
	for _, h := range good {
		out = append(out, Section{Name: h.Name(), Conf: h})
	}
	for n, err := range bad {
		out = append(out, Section{Name: n, Err: err})
	}
	slices.SortFunc(out, func(a, b Section) int { return strings.Compare(a.Name, b.Name) })
	if name == "" {
		if len(out) == 0 {
			return nil, fmt.Errorf("the hotels directory %s holds no hotel (<name>%s)", hc.Dir, HotelSuffix)
		}
		return out, nil
	}
	names := make([]string, 0, len(out))
	for _, s := range out {
		if s.Name == name {
			return []Section{s}, nil
		}
		names = append(names, s.Name)
	}
	return nil, fmt.Errorf("--hotel %s: %w in %s (hotels: %s)", name, ErrNoSuchHotel, hc.Dir, strings.Join(names, ", "))
}
