package files_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
	"github.com/ticketbridge/ticketbridge/adapters/adaptertest"
)

// ReadFields reads the fields from ticket.json, and checks that
// thread.md's header shows the department and the due date.
func (a *agent) ReadFields(_ context.Context, ref adapters.Ref) (adaptertest.HeldFields, error) {
	dir := filepath.Join(a.dir, "tickets", string(ref))
	var t struct {
		Department      string     `json:"department"`
		TaskDescription string     `json:"task_description"`
		GuestRating     *float64   `json:"guest_rating"`
		DueAt           *time.Time `json:"due_at"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "ticket.json"))
	if err != nil {
		return adaptertest.HeldFields{}, err
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return adaptertest.HeldFields{}, err
	}
	md, err := os.ReadFile(filepath.Join(dir, "thread.md"))
	if err != nil {
		return adaptertest.HeldFields{}, err
	}
	if !strings.Contains(string(md), "- **Department:** "+t.Department+"\n") {
		return adaptertest.HeldFields{}, fmt.Errorf("thread.md does not show the department %q of ticket.json", t.Department)
	}
	f := adaptertest.HeldFields{Queue: t.Department, Title: t.TaskDescription, Rating: t.GuestRating, Holds: adapters.AllFields}
	if t.DueAt != nil {
		f.Due = *t.DueAt
		if due := "- **Due:** " + t.DueAt.UTC().Format("2006-01-02 15:04 UTC") + "\n"; !strings.Contains(string(md), due) {
			return f, fmt.Errorf("thread.md does not show the due date %s of ticket.json", t.DueAt)
		}
	} else if strings.Contains(string(md), "- **Due:**") {
		return f, fmt.Errorf("thread.md shows a due date that ticket.json does not hold")
	}
	return f, nil
}
