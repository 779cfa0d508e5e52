package fleet

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// TestReloadRestartsTheHotelWhoseKeyFileChanged: a new key written into
// one hotel's key file, its hotel file untouched, restarts that hotel at
// the next reload (SIGHUP) and no other; a reload with nothing changed
// restarts none.
func TestReloadRestartsTheHotelWhoseKeyFileChanged(t *testing.T) {
	fx := newFleetFixture(t)
	for _, n := range []string{"alpha", "beta"} {
		fx.WriteHotel(n, nil)
		fx.Ticket(n, "towels for "+n)
	}
	fx.start()
	fx.WaitCycles("alpha", "beta")
	before := fx.running()
	beta := before["beta"].bridge()

	if err := fx.f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := fx.running(); got["alpha"] != before["alpha"] || got["beta"] != before["beta"] {
		t.Fatal("a reload with nothing changed restarted a hotel")
	}

	k, err := fx.TS.Server.IssueKey(fx.Orgs["alpha"], refserver.KeySpec{Name: "rotated", Platform: refserver.PlatformRead, Tickets: refserver.TicketsWrite})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.Dir, "alpha.key"), []byte(k.Value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fx.f.Reload(); err != nil {
		t.Fatal(err)
	}
	after := fx.running()
	if after["alpha"] == nil || after["alpha"] == before["alpha"] {
		t.Error("alpha, whose key file changed, was not restarted")
	}
	if after["beta"] != before["beta"] || after["beta"].bridge() != beta {
		t.Error("beta, whose secrets did not change, was restarted")
	}
	fx.Ticket("alpha", "a late checkout")
	if c := fx.WaitCycles("alpha")["alpha"]; c.Err != nil || c.Report.Created != 1 {
		t.Errorf("alpha's first cycle after the restart: %v, %+v", c.Err, c.Report)
	}
}
