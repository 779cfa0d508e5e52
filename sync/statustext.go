package sync

// This file writes the status reads (status.go) as `ticketbridge status`
// prints them: tables, for people; --json prints the reads themselves.

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ticketbridge/ticketbridge/state"
)

// short is the first 8 characters of an id, as the tables show it.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// WriteStatus writes s, the status of the state at path, to out as
// `ticketbridge status` prints it: the last cycle, what the helpdesk
// holds and the counts, then a table of the tickets and the lists of the
// journal entries waiting and refused.
func WriteStatus(out io.Writer, path string, s *Status) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "State file\t%s (adapter %s)\n", path, orDash(s.Adapter))
	if c := s.LastCycle; c != nil {
		line := fmt.Sprintf("%s at %s, %s: discovered %d, created %d, mirrored %d, sent %d, errors %d",
			c.Outcome, when(c.Start), c.Duration.Round(time.Millisecond), c.Discovered, c.Created, c.Mirrored, c.Sent, c.Errors)
		if c.Fatal != "" {
			line += "; stopped: " + c.Fatal
		}
		fmt.Fprintf(tw, "Last cycle\t%s\n", line)
		for _, p := range c.PutOff {
			fmt.Fprintf(tw, "Put off\tno calls to the %s before %s: %s\n", p.Side, when(p.Until), p.Reason)
		}
	} else {
		fmt.Fprintf(tw, "Last cycle\tnone yet\n")
	}
	fmt.Fprintf(tw, "Last success\t%s\n", when(s.LastSuccess))
	if s.FullRead != nil {
		fmt.Fprintf(tw, "Full reads\t%s\n", s.FullRead)
	}
	if !s.HeldAt.IsZero() && len(s.Held) > 0 {
		fmt.Fprintf(tw, "Held changes\tas the snapshot of %s has them (%s ago): the adapter knows them only while it runs\n",
			when(s.HeldAt), s.At.Sub(s.HeldAt).Round(time.Second))
	}
	if c := s.LastCycle; c != nil && len(c.FullLists) > 0 {
		fmt.Fprintf(tw, "Full lists\t%s: %s\n", FullListsText(c.FullLists), FullListsHint)
	}
	if c := s.LastCycle; c != nil && len(c.LeftOut) > 0 {
		fmt.Fprintf(tw, "Left out\t%s: %s\n", LeftOutText(c.LeftOut), LeftOutHint)
	}
	for _, h := range s.Held {
		if h.SetAside() && h.Mail {
			fmt.Fprintf(tw, "Mail set aside\t%s in %s, %s: %s\n", h.Op, h.File, when(h.Since), h.Need)
			continue
		}
		if h.SetAside() {
			fmt.Fprintf(tw, "Staff file set aside\t%s, %s: %s\n", h.File, when(h.Since), h.Need)
			continue
		}
		fmt.Fprintf(tw, "Held by the helpdesk\t%s\n", h.Error())
	}
	c := s.Counts
	fmt.Fprintf(tw, "Tickets\t%d tracked: %d active, %d quiet, %d closed, %d retired, %d failing\n",
		c.Tickets, c.Active, c.Quiet, c.Closed, c.Retired, c.Failing)
	if c.Paused > 0 {
		fmt.Fprintf(tw, "Paused\t%d paused by an operator: nothing of them crosses until ticketbridge resume ID\n", c.Paused)
	}
	if c.Unlinked > 0 {
		fmt.Fprintf(tw, "Unlinked\t%d unlinked by an operator: no longer mirrored, their helpdesk tickets left as they are\n", c.Unlinked)
	}
	if c.Deleted+c.NotOurs > 0 {
		fmt.Fprintf(tw, "Not synced\t%d deleted on the platform, %d helpdesk tickets of another hotel (see docs/when-a-request-looks-wrong.md)\n", c.Deleted, c.NotOurs)
	}
	fmt.Fprintf(tw, "Messages\t%d mirrored into the helpdesk, %d posted upstream by the bridge\n", c.Mirrored, c.Own)
	fmt.Fprintf(tw, "Outbound\t%d waiting to be sent, %d refused\n", c.Pending, c.Failed)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Tickets) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TICKET\tHELPDESK\tDEPARTMENT\tUPSTREAM\tHELPDESK STATUS\tNEXT READ\tWHY\tMSGS\tERROR")
		for _, t := range s.Tickets {
			errText := "-"
			if t.LastError != "" {
				errText = fmt.Sprintf("%s (%d tries)", t.LastError, t.Attempts)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", short(t.ID), orDash(t.Ref), orDash(t.Department),
				orDash(t.UpstreamStatus), orDash(t.HelpdeskStatus), t.DueText(s.At), orDash(t.DueReason), t.Mirrored+t.Own, errText)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, list := range []struct {
		title   string
		entries []EntryStatus
	}{{"Waiting to be sent", s.Pending}, {"Refused (not retried)", s.Failed}} {
		if len(list.entries) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s:\n", list.title)
		if err := writeEntries(out, list.entries, true); err != nil {
			return err
		}
	}
	if len(s.Failed) > 0 {
		fmt.Fprintln(out, "\nticketbridge retry EVENT sends a refused entry again; ticketbridge skip EVENT --reason TEXT sets it aside.")
	}
	return nil
}

// writeEntries writes the table of es, with each entry's ticket when
// withTicket.
func writeEntries(out io.Writer, es []EntryStatus, withTicket bool) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if withTicket {
		fmt.Fprint(tw, "TICKET\t")
	}
	fmt.Fprintln(tw, "EVENT\tKIND\tSTATE\tTRIES\tJOURNALED\tSENT\tUPSTREAM MESSAGE\tNOTE")
	for _, e := range es {
		if withTicket {
			fmt.Fprintf(tw, "%s\t", short(e.Ticket))
		}
		note := e.LastError
		if e.State == string(state.Pending) && !e.NextAttempt.IsZero() {
			note = strings.TrimSpace("next try " + when(e.NextAttempt) + "; " + note)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", e.EventID, e.Kind, e.State, e.Attempts,
			when(e.CreatedAt), when(e.SentAt), orDash(e.UpstreamMessageID), orDash(note))
	}
	return tw.Flush()
}

// WriteTicket writes d to out as `ticketbridge status ID` prints it at
// now, with the lists of its messages when full (a snapshot's ticket has
// none).
func WriteTicket(out io.Writer, d TicketDetail, full bool, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Ticket\t%s\n", d.ID)
	fmt.Fprintf(tw, "Helpdesk\t%s\n", strings.TrimSpace(orDash(d.Ref)+" "+d.HelpdeskURL))
	fmt.Fprintf(tw, "Department\t%s\n", orDash(d.Department))
	fmt.Fprintf(tw, "Status\tupstream %s, helpdesk %s\n", orDash(d.UpstreamStatus), orDash(d.HelpdeskStatus))
	fmt.Fprintf(tw, "Next read\t%s (%s)\n", d.DueText(now), DueReasonText(d.DueReason))
	fmt.Fprintf(tw, "Last activity\t%s\n", when(d.LastActivity))
	fmt.Fprintf(tw, "Reconciled\t%s (%s); agreed status %s\n", when(d.ReconciledAt), orDash(d.LastReconcile), orDash(d.AgreedStatus))
	if !d.Paused.IsZero() {
		fmt.Fprintf(tw, "Paused\tby %s since %s: nothing of it crosses either way until ticketbridge resume %s\n", d.PausedBy, when(d.Paused), d.ID)
	}
	if !d.Unlinked.IsZero() {
		fmt.Fprintf(tw, "Unlinked\tby %s at %s: no longer mirrored either way; its helpdesk ticket stays as it is\n", d.UnlinkedBy, when(d.Unlinked))
	}
	if d.Connecting != "" {
		fmt.Fprintf(tw, "Connecting\tto helpdesk ticket %s: the next cycle stores the request's id in it and mirrors what it lacks\n", d.Connecting)
	}
	if c := d.Carried; c != nil {
		due, rating := "none", "not rated"
		if !c.Due.IsZero() {
			due = when(c.Due)
		}
		if c.Rated {
			rating = strconv.FormatFloat(c.Rating, 'f', -1, 64)
		}
		// The description and comment are request text: the page shows
		// them to signed-in users, status not at all, as message text.
		fmt.Fprintf(tw, "Fields carried\t%s: department %s, due %s, rating %s, priority %s\n", when(c.At), orDash(c.Department), due, rating, orDash(c.Priority))
		if len(c.Unsure) > 0 {
			fmt.Fprintf(tw, "Outcome unknown\t%s: the next update sets them again\n", strings.Join(c.Unsure, ", "))
		}
	}
	if d.LastError != "" {
		fmt.Fprintf(tw, "Error\t%s (%d tries in a row)\n", d.LastError, d.Attempts)
	}
	fmt.Fprintf(tw, "Messages\t%d mirrored into the helpdesk, %d posted upstream by the bridge\n", d.Mirrored, d.Own)
	if err := tw.Flush(); err != nil {
		return err
	}
	if full {
		for _, list := range []struct {
			title, from, to string
			m               map[string]string
		}{{"Mirrored", "UPSTREAM MESSAGE", "HELPDESK ID", d.MirroredMessages}, {"Posted by the bridge", "UPSTREAM MESSAGE", "HELPDESK EVENT", d.OwnMessages}} {
			if len(list.m) == 0 {
				continue
			}
			fmt.Fprintf(out, "\n%s:\n", list.title)
			tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "%s\t%s\n", list.from, list.to)
			keys := make([]string, 0, len(list.m))
			for k := range list.m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				fmt.Fprintf(tw, "%s\t%s\n", k, orDash(list.m[k]))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if len(d.Journal) > 0 {
		fmt.Fprintf(out, "\nJournal (helpdesk events carried upstream):\n")
		return writeEntries(out, d.Journal, false)
	}
	return nil
}
