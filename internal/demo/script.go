package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
	"github.com/ticketbridge/ticketbridge/guestapi/refserver"
)

// Script plays the six steps, telling each on the demo's output. It
// fails when a step does not show what it should.
func (d *Demo) Script(ctx context.Context) error {
	if d.email != nil {
		return d.mailScript(ctx)
	}
	d.say("ticketbridge demo: the whole loop on this machine, nothing to configure.")
	d.say("")
	d.say("  Guest Requests API  %s (reference server, demo hotel \"Hotel Aurora\")", d.url)
	d.say("  helpdesk            %s (files adapter: a folder per request)", d.hdDir)
	d.say("  state               %s", d.statePath())
	d.say("")

	d.say("1. The first cycle imports the hotel's open requests (new, and with")
	d.say("   TICKETBRIDGE_BACKFILL=assigned,in_progress those already being worked on).")
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	des, err := os.ReadDir(filepath.Join(d.hdDir, "tickets"))
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, de := range des {
		d.say("   helpdesk/tickets/%s/", de.Name())
	}
	towels, err := d.folder(ctx, towelsID)
	if err != nil {
		return err
	}
	d.say("   %s/thread.md:", towels)
	if err := d.quote(d.threadPath(towels), "", 0, 4); err != nil {
		return err
	}
	d.say("   | ...")
	if err := d.quote(d.threadPath(towels), "## Thread", 0, 9); err != nil {
		return err
	}

	d.say("")
	d.say("2. The guest writes again, on the hotel's request page.")
	guestLine := "Thank you! Could we also have a second pillow?"
	if err := d.guest(towelsID, guestLine); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	d.say("   thread.md now shows:")
	if err := d.quote(d.threadPath(towels), guestLine, 2, 3); err != nil {
		return err
	}

	d.say("")
	d.say("3. An agent replies by dropping a file into the outbox.")
	reply := "Towels and a second pillow are on their way to 214!"
	if err := d.drop("reply.txt", fmt.Sprintf("ticket: %s\nkind: reply\nauthor: %s\n\n%s\n", towels, agent, reply)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	view, err := d.srv.Ticket(towelsID)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   the guest's page now shows:")
	for _, m := range view.GuestView.Messages {
		d.say("   | %s: %s", m.AuthorName, m.Body)
	}
	if !guestSees(view, reply) {
		return errors.New("demo: the reply did not reach the guest")
	}

	d.say("")
	d.say("4. An internal note stays internal.")
	note := "Use the hypoallergenic pillows for 214."
	if err := d.drop("note.txt", fmt.Sprintf("ticket: %s\nkind: note\nauthor: %s\n\n%s\n", towels, agent, note)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	if view, err = d.srv.Ticket(towelsID); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, m := range view.Messages {
		if m.Body == note {
			d.say("   upstream: %q by %s, visible_to_guest %t", m.Body, m.AuthorName, m.VisibleToGuest)
		}
	}
	if guestSees(view, note) {
		return errors.New("demo: the guest sees the internal note")
	}
	d.say("   the guest's page does not show it.")

	d.say("")
	d.say("5. Status changes go both ways.")
	if err := d.drop("done.txt", fmt.Sprintf("ticket: %s\nkind: status\nstatus: done\n", towels)); err != nil {
		return err
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	if view, err = d.srv.Ticket(towelsID); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   upstream, the towels request is now %q.", view.Ticket.Status)
	d.say("   In the hotel's console, the front desk takes the late checkout request (assigned).")
	if err := d.srv.SetStatus(lateID, guestapi.StatusAssigned); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	late, err := d.folder(ctx, lateID)
	if err != nil {
		return err
	}
	d.say("   helpdesk/tickets/%s/thread.md now says: Status: %s", late, d.headerLine(late, "Status"))
	d.say("   In the console, the front desk hands it to housekeeping, to be done by 12:00.")
	if err := d.srv.SetDepartment(lateID, "housekeeping"); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	due := d.now().Truncate(24 * time.Hour).Add(36 * time.Hour) // 12:00 UTC tomorrow
	if err := d.srv.SetDue(lateID, &due); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if _, err := d.cycle(ctx); err != nil {
		return err
	}
	d.say("   thread.md now says: Department: %s, Due: %s", d.headerLine(late, "Department"), d.headerLine(late, "Due"))

	d.say("")
	d.say("6. One more cycle: nothing changed, so nothing is written, and nothing echoes.")
	before := d.posts()
	rep, err := d.cycle(ctx)
	if err != nil {
		return err
	}
	if rep.Created+rep.Mirrored+rep.StatusDown+rep.Sent != 0 || d.posts() != before {
		return fmt.Errorf("demo: the last cycle wrote something: %s", rep)
	}
	d.say("   no writes upstream, none in the helpdesk.")
	return nil
}

func guestSees(v refserver.InternalView, body string) bool {
	for _, m := range v.GuestView.Messages {
		if m.Body == body {
			return true
		}
	}
	return false
}

// folder returns the helpdesk folder of an upstream ticket.
func (d *Demo) folder(ctx context.Context, id string) (string, error) {
	f, ok, err := d.hd.Lookup(ctx, id)
	if err != nil {
		return "", fmt.Errorf("demo: %w", err)
	}
	if !ok {
		return "", fmt.Errorf("demo: ticket %s did not reach the helpdesk", id)
	}
	return string(f.Ref), nil
}

func (d *Demo) threadPath(folder string) string {
	return filepath.Join(d.hdDir, "tickets", folder, "thread.md")
}

// quote prints n lines of a file, indented, starting back lines before
// the first line containing from (or at the start when from is "").
func (d *Demo) quote(path, from string, back, n int) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	start := 0
	if from != "" {
		for i, l := range lines {
			if strings.Contains(l, from) {
				start = max(0, i-back)
				break
			}
		}
	}
	for i := start; i < len(lines) && i < start+n; i++ {
		d.say("   | %s", lines[i])
	}
	return nil
}

// drop writes an outbox file as a person should: under a .tmp name, then
// renamed.
func (d *Demo) drop(name, content string) error {
	p := filepath.Join(d.hdDir, "outbox", name)
	if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	d.say("   dropped outbox/%s:", name)
	for _, l := range strings.Split(strings.TrimRight(content, "\n"), "\n") {
		d.say("   | %s", l)
	}
	return nil
}

// headerLine returns the value of a line of thread.md's header, such as
// Status or Department; "?" when it has none.
func (d *Demo) headerLine(folder, name string) string {
	b, err := os.ReadFile(d.threadPath(folder))
	if err != nil {
		return "?"
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if s, ok := strings.CutPrefix(sc.Text(), "- **"+name+":** "); ok {
			return s
		}
	}
	return "?"
}

func (d *Demo) posts() int {
	n := 0
	for route, byStatus := range d.srv.Stats().Requests {
		if strings.HasPrefix(route, "POST "+refserver.BasePath) {
			for _, c := range byStatus {
				n += c
			}
		}
	}
	return n
}
