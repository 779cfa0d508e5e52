package refserver

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/guestapi"
)

// The console's edits of a request's fields, as the hotel's staff make
// them: each is logged as an operation and moves updated_at to the time of
// the change, as a status change does, so that the lists show it.

// RateTicket sets the guest's rating (a number from 0 to 10), or clears it
// when rating is nil.
func (s *Server) RateTicket(ticketID string, rating *float64) error {
	if err := checkRating(rating); err != nil {
		return fmt.Errorf("rate ticket: %w", err)
	}
	return s.edit(ticketID, "rate ticket", func(t *ticket) (op, from, to string) {
		from, to = ratingString(t.rating), ratingString(rating)
		t.rating = clonePtr(rating)
		return "rating", from, to
	})
}

func ratingString(r *float64) string {
	if r == nil {
		return ""
	}
	return fmt.Sprint(*r)
}

// SetDepartment moves a request to another department.
func (s *Server) SetDepartment(ticketID, department string) error {
	if strings.TrimSpace(department) == "" {
		return fmt.Errorf("set department: %w: department is empty", ErrInvalid)
	}
	return s.edit(ticketID, "set department", func(t *ticket) (op, from, to string) {
		from, t.department = t.department, department
		return "department", from, department
	})
}

// SetDescription changes a request's task_description.
func (s *Server) SetDescription(ticketID, description string) error {
	if strings.TrimSpace(description) == "" {
		return fmt.Errorf("set description: %w: task_description is empty", ErrInvalid)
	}
	return s.edit(ticketID, "set description", func(t *ticket) (op, from, to string) {
		from, t.description = t.description, description
		return "task_description", from, description
	})
}

// SetDue sets a request's target_due_at, or clears it when due is nil.
func (s *Server) SetDue(ticketID string, due *time.Time) error {
	return s.edit(ticketID, "set due date", func(t *ticket) (op, from, to string) {
		from, to = timeString(t.due), timeString(due)
		t.due = utcPtr(due)
		return "target_due_at", from, to
	})
}

// SetComment sets the console card's internal comment, or clears it when
// comment is nil.
func (s *Server) SetComment(ticketID string, comment *string) error {
	return s.edit(ticketID, "set comment", func(t *ticket) (op, from, to string) {
		from, to = deref(t.comments), deref(comment)
		t.comments = clonePtr(comment)
		return "comments", from, to
	})
}

func timeString(t *time.Time) string {
	if t == nil {
		return ""
	}
	return guestapi.FormatTime(*t)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// edit applies change to ticket ticketID under the store's lock, logs the
// operation it names and moves updated_at.
func (s *Server) edit(ticketID, what string, change func(t *ticket) (op, from, to string)) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	t, ok := s.st.tickets[ticketID]
	if !ok {
		return fmt.Errorf("%s: ticket %q: %w", what, ticketID, ErrNotFound)
	}
	now := s.nowUTC()
	op, from, to := change(t)
	t.ops = append(t.ops, Operation{At: now, Op: op, From: from, To: to, Source: SourceConsole})
	if now.After(t.updated) {
		t.updated = now
	}
	s.log.Info("ticket edited", slog.String("ticket", t.id), slog.String("field", op))
	return nil
}

// consoleFields answers the console's POST tickets/{id}/fields: each
// field given is set, an absent one left; every value is checked before
// any is set.
func (s *Server) consoleFields(id string, body []byte) response {
	var req struct {
		Department      *string         `json:"department"`
		TaskDescription *string         `json:"task_description"`
		TargetDueAt     json.RawMessage `json:"target_due_at"`
		Comments        json.RawMessage `json:"comments"`
	}
	if bad := decodeStrict(body, &req); bad != nil {
		return *bad
	}
	if err := s.editFields(id, req.Department, req.TaskDescription, req.TargetDueAt, req.Comments); err != nil {
		return consoleError(err)
	}
	return s.consoleTicket(id)
}

func (s *Server) editFields(id string, dept, desc *string, dueRaw, commentsRaw json.RawMessage) error {
	req := struct {
		Department, TaskDescription *string
		TargetDueAt, Comments       json.RawMessage
	}{dept, desc, dueRaw, commentsRaw}
	var edits []func() error
	if req.Department != nil {
		if strings.TrimSpace(*req.Department) == "" {
			return fmt.Errorf("set fields: %w: department is empty", ErrInvalid)
		}
		edits = append(edits, func() error { return s.SetDepartment(id, *req.Department) })
	}
	if req.TaskDescription != nil {
		if strings.TrimSpace(*req.TaskDescription) == "" {
			return fmt.Errorf("set fields: %w: task_description is empty", ErrInvalid)
		}
		edits = append(edits, func() error { return s.SetDescription(id, *req.TaskDescription) })
	}
	if req.TargetDueAt != nil {
		var v *string
		if err := json.Unmarshal(req.TargetDueAt, &v); err != nil {
			return fmt.Errorf("set fields: %w: target_due_at is neither a timestamp nor null", ErrInvalid)
		}
		due, err := parseOptTime("target_due_at", v)
		if err != nil {
			return fmt.Errorf("set fields: %w", err)
		}
		edits = append(edits, func() error { return s.SetDue(id, due) })
	}
	if req.Comments != nil {
		var v *string
		if err := json.Unmarshal(req.Comments, &v); err != nil {
			return fmt.Errorf("set fields: %w: comments is neither text nor null", ErrInvalid)
		}
		edits = append(edits, func() error { return s.SetComment(id, v) })
	}
	if len(edits) == 0 {
		return fmt.Errorf("set fields: %w: no field given (department, task_description, target_due_at, comments)", ErrInvalid)
	}
	for _, edit := range edits {
		if err := edit(); err != nil {
			return err
		}
	}
	return nil
}
