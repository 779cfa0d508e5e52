package rt

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketbridge/ticketbridge/adapters"
)

func (a *Adapter) sentOn() bool { return !strings.EqualFold(a.cfg.SentField, SentFieldOff) }

// markers returns the upstream messages ticket id holds, by the marker
// line of its text/plain parts with an attachment id above after, each
// with its transaction id, and the highest attachment id read.
func (a *Adapter) markers(ctx context.Context, id, after int64) (map[string]string, int64, error) {
	out := map[string]string{}
	maxID, err := a.eachMarker(ctx, id, after, func(m adapters.Marker, txn int64, _ string) {
		if m.Kind != adapters.MarkerMessage || checkID("marker", m.ID) != nil {
			return
		}
		if _, dup := out[m.ID]; !dup {
			out[m.ID] = strconv.FormatInt(txn, 10)
		}
	})
	if err != nil {
		return nil, 0, err
	}
	return out, maxID, nil
}

// eachMarker calls f with the marker of each text/plain part of ticket id
// with an attachment id above after that ends in one, its transaction id
// and the name of the RT user who wrote it, oldest first; it returns the
// highest attachment id read.
func (a *Adapter) eachMarker(ctx context.Context, id, after int64, f func(m adapters.Marker, txn int64, creator string)) (int64, error) {
	maxID := after
	conds := []searchCond{{Field: "ContentType", Value: "text/plain"}}
	if after > 0 {
		conds = append(conds, searchCond{Field: "id", Operator: ">", Value: after})
	}
	for pg := 1; ; pg++ {
		q := url.Values{
			"fields":   {"TransactionId,Content,Creator"},
			"orderby":  {"id"},
			"order":    {"ASC"},
			"per_page": {strconv.Itoa(perPage)},
			"page":     {strconv.Itoa(pg)},
		}
		var p page[rtAttachment]
		if _, err := a.c.call(ctx, "read markers", http.MethodPost, fmt.Sprintf("/ticket/%d/attachments", id), q, conds, &p, true); err != nil {
			return 0, fmt.Errorf("read the messages of RT ticket %d: %w", id, err)
		}
		for _, at := range p.Items {
			maxID = max(maxID, int64(at.ID))
			if m, ok := adapters.ParseMarker(at.Content); ok {
				f(m, int64(at.TransactionID), at.Creator.name())
			}
		}
		if !p.more() || len(p.Items) == 0 {
			return maxID, nil
		}
	}
}

// Append adds msgs to the ticket: public ones as correspondence, the
// others as comments. A message whose marker the ticket already holds is
// reported as Existed and not written again.
//
// RT's scrip "On Correspond Open Inactive Tickets" opens a new or closed
// ticket on correspondence. A new guest message on a closed ticket should
// indeed reopen it; but a new ticket stays new until an agent takes it up,
// and filling in the thread of a request that is already closed (every
// public message appended older than the RT ticket) must not reopen it.
// In those two cases Append puts the status back.
func (a *Adapter) Append(ctx context.Context, ref adapters.Ref, msgs []adapters.Message) ([]adapters.Appended, error) {
	for i, m := range msgs {
		if err := checkID(fmt.Sprintf("message %d: upstream message id", i+1), m.UpstreamID); err != nil {
			return nil, fmt.Errorf("append to RT ticket %s: %w", ref, err)
		}
		if strings.TrimSpace(m.Body) == "" {
			return nil, fmt.Errorf("append to RT ticket %s: message %d (%s) has an empty body: %w", ref, i+1, m.UpstreamID, adapters.ErrInvalid)
		}
	}
	id, err := parseRef(ref)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	if _, err := a.ready(ctx); err != nil {
		return nil, err
	}
	tk, err := a.getTicket(ctx, "append", id)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	have, maxAtt, err := a.markers(ctx, id, 0)
	if err != nil {
		return nil, fmt.Errorf("append: %w", err)
	}
	created, _ := rtTime(tk.Created)
	cur := tk.Status // as far as the adapter knows; "" once a scrip may have moved it
	out := make([]adapters.Appended, len(msgs))
	var unknown []int         // posted, but RT's answer named no transaction
	first := map[string]int{} // upstream id -> the index that posted it
	for i, m := range msgs {
		out[i] = adapters.Appended{UpstreamID: m.UpstreamID}
		if txn, ok := have[m.UpstreamID]; ok {
			out[i].HelpdeskID, out[i].Existed = txn, true
			continue
		}
		if _, ok := first[m.UpstreamID]; ok {
			out[i].Existed = true // the same message twice in one call
			continue
		}
		kind := "comment"
		body := map[string]any{"Content": renderMessage(m), "ContentType": "text/plain"}
		if m.Public {
			kind = "correspond"
			// RT's Created has a resolution of a second.
			backfill := !created.IsZero() && m.CreatedAt.Before(created.Add(time.Second))
			if a.keepsStatus(cur, backfill) {
				body["Status"] = cur // set back in the same request, after RT's scrips ran
			} else {
				cur = ""
			}
		}
		resp, err := a.c.call(ctx, "append "+kind, http.MethodPost, fmt.Sprintf("/ticket/%d/%s", id, kind), nil, body, nil, false)
		if err != nil {
			return nil, fmt.Errorf("append message %s to RT ticket %d: %w", m.UpstreamID, id, err)
		}
		first[m.UpstreamID] = i
		if txn := locationID(resp, "/transaction/"); txn != "" {
			out[i].HelpdeskID = txn
		} else {
			unknown = append(unknown, i)
		}
		a.log.LogAttrs(ctx, slog.LevelDebug, "appended message", slog.String("ticket", a.upstreamOf(id)),
			slog.String("message", m.UpstreamID), slog.String("op", kind), slog.Int64("rt_ticket", id))
	}
	if len(unknown) > 0 {
		got, _, err := a.markers(ctx, id, maxAtt)
		if err != nil {
			return nil, fmt.Errorf("append: %w", err)
		}
		for _, i := range unknown {
			txn, ok := got[msgs[i].UpstreamID]
			if !ok {
				return nil, fmt.Errorf("append message %s to RT ticket %d: RT accepted it but its text lacks the marker line; check that no scrip rewrites correspondence", msgs[i].UpstreamID, id)
			}
			out[i].HelpdeskID = txn
		}
	}
	for i, m := range msgs {
		if out[i].HelpdeskID == "" {
			out[i].HelpdeskID = out[first[m.UpstreamID]].HelpdeskID
		}
	}
	return out, nil
}

// locationID returns the id at the end of a 201's Location header when it
// names a record of the kind (REST2 answers a reply or comment with the
// transaction it made: /REST/2.0/transaction/<id>), "" otherwise.
func locationID(resp *adapters.HTTPResponse, kind string) string {
	if resp == nil {
		return ""
	}
	loc := resp.Header.Get("Location")
	i := strings.LastIndex(loc, kind)
	if i < 0 {
		return ""
	}
	id := loc[i+len(kind):]
	if n, err := strconv.ParseInt(id, 10, 64); err != nil || n <= 0 {
		return ""
	}
	return id
}

// MarkSent records "<event id>=<upstream message id>" in the ticket's
// SentField (see the package doc). With the record off it does nothing.
// Calls for one ticket are serialised within the adapter; two bridges
// writing to one RT ticket are not supported.
func (a *Adapter) MarkSent(ctx context.Context, ref adapters.Ref, eventID, upstreamMessageID string) error {
	if !a.sentOn() {
		return nil
	}
	if err := checkID("event id", eventID); err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	if upstreamMessageID != "" {
		if err := checkID("upstream message id", upstreamMessageID); err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
	}
	id, err := parseRef(ref)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	s, err := a.ready(ctx)
	if err != nil {
		return err
	}
	value := eventID + "=" + upstreamMessageID
	lock := &a.sentLocks[id%int64(len(a.sentLocks))]
	lock.Lock()
	defer lock.Unlock()
	tk, err := a.getTicket(ctx, "mark sent", id)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	values := tk.values(s.sentCF)
	if slices.Contains(values, value) {
		return nil
	}
	values = append(slices.Clone(values), value)
	field := strconv.FormatInt(s.sentCF, 10)
	resp, err := a.c.call(ctx, "mark sent", http.MethodPut, fmt.Sprintf("/ticket/%d", id), nil,
		map[string]any{"CustomFields": map[string]any{field: values}}, nil, true)
	if err != nil {
		return fmt.Errorf("record delivery of event %s on RT ticket %d: %w", eventID, id, err)
	}
	now, err := a.getTicket(ctx, "mark sent", id)
	if err != nil {
		return fmt.Errorf("record delivery of event %s: %w", eventID, err)
	}
	if !slices.Contains(now.values(s.sentCF), value) {
		return fmt.Errorf("record delivery of event %s on RT ticket %d: the custom field %q did not take the value; RT said: %s",
			eventID, id, a.cfg.SentField, strings.Join(messages(resp), "; "))
	}
	return nil
}
