package statuspage

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/sync"
)

// hotelsData is the list of hotels of a daemon that serves many.
type hotelsData struct {
	Rows     []hotelRow
	NotReady int
}

// hotelRow is one hotel of the list.
type hotelRow struct {
	Name   string
	Link   string // its status page
	Runs   bool   // it has a Source
	Ready  bool
	Reason string
	// Of a hotel that runs: its last cycle (nil: none yet) and counts.
	Last   *sync.Report
	Counts sync.StatusCounts
}

// list serves the list of hotels: the hotels that are not ready first,
// since they are what someone opening the page looks for, then the
// others; by name within each group, so that a row stays where it was
// from one view to the next.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	all := s.hotels()
	d := &hotelsData{Rows: make([]hotelRow, 0, len(all))}
	for _, l := range all {
		row := hotelRow{Name: l.Name, Link: "/hotels/" + url.PathEscape(l.Name) + "/", Runs: l.Source != nil, Ready: l.Ready, Reason: l.Reason}
		if l.Source != nil {
			snap := summary(l.Source)
			row.Last, row.Counts = snap.Status.LastCycle, snap.Status.Counts
			if n := len(snap.Cycles); n > 0 && (row.Last == nil || snap.Cycles[n-1].Start.After(row.Last.Start)) {
				row.Last = &snap.Cycles[n-1]
			}
		}
		if !row.Ready {
			d.NotReady++
		}
		d.Rows = append(d.Rows, row)
	}
	slices.SortFunc(d.Rows, func(a, b hotelRow) int {
		if a.Ready != b.Ready {
			if a.Ready {
				return 1
			}
			return -1
		}
		return strings.Compare(a.Name, b.Name)
	})
	v := s.view(r, scope{}, "Hotels")
	v.Hotels = d
	s.render(w, http.StatusOK, "hotels", v)
}

// summarizer is a Source that keeps the counts apart from the request
// list, which it may read on demand ([Hotel.Summary]).
type summarizer interface{ Summary() Snapshot }

// summary returns what the list of hotels shows of src.
func summary(src Source) Snapshot {
	if s, ok := src.(summarizer); ok {
		return s.Summary()
	}
	return src.Snapshot()
}
