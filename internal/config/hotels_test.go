package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
)

// TestHotelNeverPrintsItsKey: a hotel's resolved configuration printed
// whole, as a log line or an error might, shows no API key.
func TestHotelNeverPrintsItsKey(t *testing.T) {
	h := Hotel{File: HotelFile{Name: "north"}, Key: "rta_secretvalue"}
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if s := fmt.Sprintf(format, h); strings.Contains(s, "secretvalue") {
			t.Errorf("%s prints the key: %s", format, s)
		}
	}
}

// TestHotelFileSecretsWarn: a hotel file its group may read (staff join
// the group ticketbridge) that sets a secret as a value is named, with
// the file and the _FILE variable to use instead, and never the secret.
// The daemon logs these warnings at start and at each reload.
func TestHotelFileSecretsWarn(t *testing.T) {
	const marker = "hotel-secret-MARKER-5e1f"
	dir := t.TempDir()
	write := func(name, body string, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(dir, name+HotelSuffix)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	seaside := write("seaside", "TICKETBRIDGE_ADAPTER=zendesk\nTICKETBRIDGE_API_KEY="+marker+"\nTICKETBRIDGE_ZENDESK_TOKEN="+marker+"\n", 0o640)
	airport := write("airport", "TICKETBRIDGE_WEBHOOK_SECRET="+marker+"\nTICKETBRIDGE_STATE=host=db user=tb password="+marker+" dbname=tb\n", 0o644)
	write("quiet", "TICKETBRIDGE_API_KEY_FILE=/etc/ticketbridge/keys/quiet.key\nTICKETBRIDGE_STATE=postgres://tb@db/tb\n", 0o640)
	write("private", "TICKETBRIDGE_RT_TOKEN="+marker+"\n", 0o600) // only the service reads it

	env := envconfig.MapLookuper(map[string]string{"TICKETBRIDGE_API_URL": "https://api.example.com", "TICKETBRIDGE_HOTELS_DIR": dir})
	main, err := LoadDaemon(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	_, _, _ = LoadHotelDir(context.Background(), Source{Env: env}, main, dir, func(w string) { warnings = append(warnings, w) })
	all := strings.Join(warnings, "\n")
	if strings.Contains(all, marker) {
		t.Fatalf("a warning shows the secret:\n%s", all)
	}
	for _, want := range [][]string{
		{seaside, "TICKETBRIDGE_API_KEY", "TICKETBRIDGE_API_KEY_FILE"},
		{seaside, "TICKETBRIDGE_ZENDESK_TOKEN", "TICKETBRIDGE_ZENDESK_TOKEN_FILE"},
		{airport, "TICKETBRIDGE_WEBHOOK_SECRET", "TICKETBRIDGE_WEBHOOK_SECRET_FILE"},
		{airport, "TICKETBRIDGE_STATE", "password"},
	} {
		found := false
		for _, w := range warnings {
			if strings.Contains(w, want[0]) && strings.Contains(w, want[1]+" ") && strings.Contains(w, want[2]) {
				found = true
			}
		}
		if !found {
			t.Errorf("no warning names %s, %s and %s:\n%s", want[0], want[1], want[2], all)
		}
	}
	for _, quiet := range []string{"quiet", "private"} {
		if strings.Contains(all, quiet+HotelSuffix) {
			t.Errorf("a warning about %s, which sets no secret others may read:\n%s", quiet, all)
		}
	}
}
