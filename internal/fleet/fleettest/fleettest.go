// Package fleettest holds what tests of a daemon of many hotels share: one
// reference server, and a hotels directory whose hotels are each an
// organisation of their own with its own key, files helpdesk and state
// file; the cycles the fleet reports, and the wait for them. The fleet's
// own tests run a fleet.Fleet on it, the commands' tests the daemon as
// `ticketbridge run` serves it. It is for tests only.
package fleettest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver/refservertest"
	"github.com/ticketbridge/ticketbridge/internal/config"
	"github.com/ticketbridge/ticketbridge/sync"
)

// Kit is the reference server and the files of a fleet of hotels.
type Kit struct {
	t         testing.TB
	TS        *refservertest.TestServer
	Dir       string
	HotelsDir string
	// MainVars are the main file's variables, written by MainFile.
	MainVars map[string]string
	Orgs     map[string]string // hotel -> organisation
	// Cycles receives each cycle the fleet reports through AfterCycle.
	Cycles chan Cycle
	// Stopped, when set, is the daemon's end: WaitCycles fails the test
	// when it comes first.
	Stopped <-chan error
}

// Cycle is one hotel's cycle as the fleet reported it.
type Cycle struct {
	Hotel  string
	Report sync.Report
	Err    error
}

// New returns a kit in a directory of the test's, its main file naming
// the reference server, the files helpdesk, a state file and the hotels
// directory; cycles after the first are run by the tests. The process's
// service variables are cleared first (see ClearServiceEnv).
func New(t testing.TB) *Kit {
	t.Helper()
	ClearServiceEnv(t)
	dir := t.TempDir()
	k := &Kit{t: t, TS: refservertest.New(t), Dir: dir, HotelsDir: filepath.Join(dir, "hotels.d"),
		Orgs: map[string]string{}, Cycles: make(chan Cycle, 4096)}
	if err := os.Mkdir(k.HotelsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	k.MainVars = map[string]string{
		"TICKETBRIDGE_API_URL":      k.TS.URL,
		"TICKETBRIDGE_ADAPTER":      "files",
		"TICKETBRIDGE_FILES_SETTLE": "0s",
		"TICKETBRIDGE_STATE":        filepath.Join(dir, "state", "main.db"),
		"TICKETBRIDGE_SCHEDULE":     "@every 1000h", // cycles after the first are run by the tests
		"TICKETBRIDGE_HOTELS_DIR":   k.HotelsDir,
	}
	return k
}

// ClearServiceEnv keeps the test process's own systemd variables and
// every TICKETBRIDGE_* variable (CI exports the Request Tracker tests'
// ones) out of the configuration, until the test ends. The test kits' own
// variable (the test database) goes too: tests that need it read it first
// (statetest.PostgresURL).
func ClearServiceEnv(t testing.TB) {
	t.Helper()
	keys := []string{"STATE_DIRECTORY", "CREDENTIALS_DIRECTORY", "NOTIFY_SOCKET", "WATCHDOG_USEC", "JOURNAL_STREAM"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, config.EnvPrefix) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// WriteHotel writes the file of a hotel with an organisation and a key of
// its own (made at the first call), plus extra variables.
func (k *Kit) WriteHotel(name string, extra map[string]string) {
	k.t.Helper()
	if _, ok := k.Orgs[name]; !ok {
		org := uuid.NewString()
		if err := k.TS.Server.AddOrganization(org, "hotel"); err != nil {
			k.t.Fatal(err)
		}
		key, err := k.TS.Server.IssueKey(org, refserver.KeySpec{Name: "bridge", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
		if err != nil {
			k.t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(k.Dir, name+".key"), []byte(key.Value+"\n"), 0o600); err != nil {
			k.t.Fatal(err)
		}
		k.Orgs[name] = org
	}
	var s strings.Builder
	fmt.Fprintf(&s, "# hotel %s\nTICKETBRIDGE_API_KEY_FILE=%s\nTICKETBRIDGE_FILES_DIR=%s\n",
		name, filepath.Join(k.Dir, name+".key"), k.FilesDir(name))
	for n, v := range extra {
		fmt.Fprintf(&s, "%s=%s\n", n, v)
	}
	if err := os.WriteFile(filepath.Join(k.HotelsDir, name+".env"), []byte(s.String()), 0o600); err != nil {
		k.t.Fatal(err)
	}
}

// FilesDir is the folder of a hotel's files helpdesk.
func (k *Kit) FilesDir(name string) string { return filepath.Join(k.Dir, "helpdesk", name) }

// MainFile writes the main file from MainVars and returns its path.
func (k *Kit) MainFile() string {
	k.t.Helper()
	var s strings.Builder
	for n, v := range k.MainVars {
		s.WriteString(n + "=" + v + "\n")
	}
	path := filepath.Join(k.Dir, "ticketbridge.env")
	if err := os.WriteFile(path, []byte(s.String()), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return path
}

// AfterCycle is the fleet's AfterCycle: it hands each cycle to Cycles,
// dropping it when nobody read the 4096 before.
func (k *Kit) AfterCycle(hotel string, rep sync.Report, err error) {
	select {
	case k.Cycles <- Cycle{hotel, rep, err}:
	default:
	}
}

// WaitCycles waits until each hotel named has finished a cycle, and
// returns the last report of each.
func (k *Kit) WaitCycles(names ...string) map[string]Cycle {
	k.t.Helper()
	got := map[string]Cycle{}
	for len(got) < len(names) {
		select {
		case c := <-k.Cycles:
			for _, n := range names {
				if n == c.Hotel {
					got[n] = c
				}
			}
		case err := <-k.Stopped:
			k.t.Fatalf("the daemon stopped: %v", err)
		case <-time.After(time.Minute): // a hang's report, not a timing
			k.t.Fatalf("no cycle of every hotel of %v within a minute; got %v", names, got)
		}
	}
	return got
}

// Ticket creates a request of a hotel upstream and returns its id.
func (k *Kit) Ticket(hotel, desc string) string {
	k.t.Helper()
	tv, err := k.TS.Server.CreateTicket(k.Orgs[hotel], refserver.NewTicket{Department: "housekeeping", TaskDescription: desc})
	if err != nil {
		k.t.Fatal(err)
	}
	return tv.ID
}

// Folders returns the ticket folders of a hotel's files helpdesk.
func (k *Kit) Folders(hotel string) []string {
	des, _ := os.ReadDir(filepath.Join(k.FilesDir(hotel), "tickets"))
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
