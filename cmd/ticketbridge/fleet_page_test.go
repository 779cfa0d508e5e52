package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startPagedFleet runs a fleet of alpha and beta, each with one request,
// a hotel whose configuration is wrong, and the console token; the
// commands run meanwhile find the daemon on its listener.
func startPagedFleet(t *testing.T) (fx *fleetFixture, alphaTicket, betaTicket string) {
	t.Helper()
	fx = newFleetFixture(t)
	tokFile := filepath.Join(fx.Dir, "console-token")
	if err := os.WriteFile(tokFile, []byte(consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fx.MainVars["TICKETBRIDGE_CONSOLE_TOKEN_FILE"] = tokFile
	fx.WriteHotel("alpha", nil)
	fx.WriteHotel("beta", nil)
	fx.WriteHotel("broken", map[string]string{"TICKETBRIDGE_ADAPTER": "no-such-helpdesk"})
	alphaTicket, betaTicket = fx.Ticket("alpha", "extra pillows"), fx.Ticket("beta", "a taxi at six")
	fx.start()
	fx.WaitCycles("alpha", "beta")
	fx.MainVars["TICKETBRIDGE_LISTEN"] = fx.tel.Addr().String()
	return fx, alphaTicket, betaTicket
}

// TestFleetStatusPage: the daemon of a hotels directory serves the list
// of its hotels at / and each hotel's page under /hotels/NAME/, fed by
// that hotel's cycles; a reload adds and removes hotels.
func TestFleetStatusPage(t *testing.T) {
	fx, a, b := startPagedFleet(t)
	code, body := fx.get("/")
	if code != 200 {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{`href="/hotels/alpha/"`, `href="/hotels/beta/"`, `<td class="nowrap">broken</td>`, "no-such-helpdesk", "1 not ready", `href="/login"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the list of hotels lacks %s:\n%s", want, body)
		}
	}
	code, body = fx.get("/hotels/alpha/tickets")
	if code != 200 || !strings.Contains(body, "ticketbridge · alpha") || !strings.Contains(body, `href="/hotels/alpha/tickets/`+a+`"`) || strings.Contains(body, b) {
		t.Errorf("alpha's requests, after its first cycle: %d\n%s", code, body)
	}
	code, body = fx.get("/hotels/beta/tickets/" + b)
	if code != 200 || !strings.Contains(body, b) {
		t.Errorf("beta's request page: %d\n%s", code, body)
	}
	if code, body := fx.get("/hotels/beta/tickets/" + a); code != 404 {
		t.Errorf("alpha's request on beta's page: %d\n%s", code, body)
	}
	if code, body := fx.get("/hotels/broken/"); code != 503 || !strings.Contains(body, "no-such-helpdesk") {
		t.Errorf("the page of the hotel that does not run: %d\n%s", code, body)
	}
	if code, _ := fx.get("/readyz"); code != 503 {
		t.Errorf("/readyz with a broken hotel: %d", code)
	}

	// A reload: beta's file is gone, gamma's is new.
	if err := os.Remove(filepath.Join(fx.HotelsDir, "beta.env")); err != nil {
		t.Fatal(err)
	}
	fx.WriteHotel("gamma", nil)
	if err := fx.f.Reload(); err != nil {
		t.Fatal(err)
	}
	fx.WaitCycles("gamma")
	_, body = fx.get("/")
	if strings.Contains(body, "/hotels/beta/") || !strings.Contains(body, `href="/hotels/gamma/"`) {
		t.Errorf("after the reload the list is\n%s", body)
	}
	if code, body := fx.get("/hotels/beta/"); code != 404 || !strings.Contains(body, "alpha, broken, gamma") {
		t.Errorf("the page of a removed hotel: %d\n%s", code, body)
	}
	if code, _ := fx.get("/hotels/gamma/"); code != 200 {
		t.Errorf("the page of a new hotel: %d", code)
	}
}

// TestFleetRetryCommand: retry and skip name the hotel with --hotel and
// reach that hotel's state through the daemon, no other's.
func TestFleetRetryCommand(t *testing.T) {
	fx, a, _ := startPagedFleet(t)
	out, errOut, code := fx.cmd("retry", a, "--hotel", "alpha")
	if code != 0 || !strings.Contains(out, "read now: ticket "+a) {
		t.Fatalf("retry --hotel alpha of alpha's request: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := fx.cmd("retry", "--hotel", "beta", a); code != 1 || !strings.Contains(errOut, "404") || !strings.Contains(errOut, "no tracked ticket") {
		t.Errorf("retry --hotel beta of alpha's request: exit %d %s", code, errOut)
	}
	if _, errOut, code := fx.cmd("skip", a, "--hotel", "alpha", "--reason", "x"); code != 1 || !strings.Contains(errOut, "no journal entry") {
		t.Errorf("skip --hotel alpha of a request id: exit %d %s", code, errOut)
	}
	if _, errOut, code := fx.cmd("retry", a); code != 2 || !strings.Contains(errOut, "--hotel") || !strings.Contains(errOut, "alpha, beta, broken") {
		t.Errorf("retry without --hotel: exit %d %s", code, errOut)
	}
	if _, errOut, code := fx.cmd("skip", a, "--hotel", "nope", "--reason", "x"); code != 2 || !strings.Contains(errOut, "no such hotel") {
		t.Errorf("skip --hotel nope: exit %d %s", code, errOut)
	}
	delete(fx.MainVars, "TICKETBRIDGE_HOTELS_DIR")
	if _, errOut, code := fx.cmd("retry", a, "--hotel", "alpha"); code != 2 || !strings.Contains(errOut, "--hotel needs TICKETBRIDGE_HOTELS_DIR") {
		t.Errorf("retry --hotel without a hotels directory: exit %d %s", code, errOut)
	}
}

// TestFleetPageInBrowser: in headless Chromium, the list of hotels leads
// to a hotel's page, and a signed-in Read now on it is that hotel's. It
// skips when Chromium is missing.
func TestFleetPageInBrowser(t *testing.T) {
	chromiumPath(t)
	shots := screenshotsDir(t)
	fx, a, _ := startPagedFleet(t)
	base := "http://" + fx.tel.Addr().String()
	tab := startChromium(t).newTab()
	tab.navigate(base + "/")
	text := tab.text()
	for _, want := range []string{"Hotels", "alpha", "beta", "broken", "no-such-helpdesk", "1 not ready"} {
		if !strings.Contains(text, want) {
			t.Errorf("the list of hotels lacks %q:\n%s", want, text)
		}
	}
	tab.screenshot(filepath.Join(shots, "fleet-hotels.png"))
	tab.click(`a[href="/hotels/alpha/"]`)
	if text := tab.text(); !strings.Contains(text, "ticketbridge · alpha") || !strings.Contains(text, "Requests tracked") {
		t.Fatalf("alpha's page from the list:\n%s", text)
	}

	tab.navigate(base + "/login")
	tab.fill("input[name=name]", "Ines")
	tab.fill("input[name=token]", consoleToken)
	tab.click("form.login button")
	if text := tab.text(); !strings.Contains(text, "Signed in as Ines") || !strings.Contains(text, "beta") {
		t.Fatalf("after sign-in, the list:\n%s", text)
	}
	tab.navigate(base + "/hotels/alpha/tickets/" + a)
	tab.click(`form[action^="/hotels/alpha/read-now"] button`)
	var at string
	json.Unmarshal(tab.eval("location.pathname"), &at)
	if text := tab.text(); at != "/hotels/alpha/tickets/"+a || !strings.Contains(text, "The request is due now") {
		t.Errorf("after Read now on alpha's request, at %s:\n%s", at, text)
	}
}
