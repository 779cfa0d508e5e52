package config

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sethvargo/go-envconfig"
)

// TestSections: the hotels a command acts on come in name order, a hotel
// whose file is wrong among them with its error; a name picks one, and a
// name the configuration does not serve is the command line's error.
func TestSections(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	hotels := filepath.Join(dir, "hotels")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for name, extra := range map[string]string{"gamma": "", "alpha": "", "beta": "TICKETBRIDGE_SCHEDULE=nonsense\n"} {
		key := filepath.Join(dir, name+"-api-key")
		write(key, "rta_"+name+"\n")
		write(filepath.Join(hotels, name+HotelSuffix), "TICKETBRIDGE_API_KEY_FILE="+key+"\nTICKETBRIDGE_FILES_DIR="+filepath.Join(dir, name)+"\n"+extra)
	}
	vars := map[string]string{
		"TICKETBRIDGE_API_URL": "https://api.example.com",
		"TICKETBRIDGE_ADAPTER": "files",
		"TICKETBRIDGE_STATE":   filepath.Join(dir, "state.db"),
	}
	sections := func(name string, withDir bool) ([]Section, error) {
		t.Helper()
		v := map[string]string{}
		for k, x := range vars {
			v[k] = x
		}
		if withDir {
			v["TICKETBRIDGE_HOTELS_DIR"] = hotels
		}
		src := Source{Env: envconfig.MapLookuper(v)}
		main, err := LoadDaemon(ctx, src.Env)
		if err != nil {
			t.Fatal(err)
		}
		return Sections(ctx, src, main, name, func(string) {})
	}

	secs, err := sections("", true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range secs {
		names = append(names, s.Name)
		if (s.Err != nil) != (s.Name == "beta") {
			t.Errorf("hotel %s: error %v", s.Name, s.Err)
		}
	}
	if len(names) != 3 || names[0] != "alpha" || names[1] != "beta" || names[2] != "gamma" {
		t.Fatalf("hotels %v, want alpha, beta, gamma", names)
	}
	if secs, err := sections("gamma", true); err != nil || len(secs) != 1 || secs[0].Name != "gamma" || secs[0].Conf.Name() != "gamma" {
		t.Fatalf("--hotel gamma: %v, %v", secs, err)
	}
	if _, err := sections("delta", true); !errors.Is(err, ErrNoSuchHotel) || err.Error() != "--hotel delta: no such hotel in "+hotels+" (hotels: alpha, beta, gamma)" {
		t.Fatalf("--hotel delta: %v", err)
	}
	if secs, err := sections("", false); err != nil || secs != nil {
		t.Fatalf("one hotel: %v, %v; want nil, nil", secs, err)
	}
	if _, err := sections("alpha", false); !errors.Is(err, ErrNoHotels) {
		t.Fatalf("--hotel alpha without a hotels directory: %v", err)
	}
}
