package notify

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind is what a condition is about.
type Kind string

// The kinds of condition the daemon reports.
const (
	// CyclesFailing: a hotel's cycles have failed for longer than
	// [Options.CyclesFailingAfter]; the cause says why (API down, key
	// refused, helpdesk refused).
	CyclesFailing Kind = "cycles-failing"
	// KeyRefused: the API answered 401 to the hotel's key; fires at once.
	KeyRefused Kind = "api-key-refused"
	// Undeliverable: a reply or status change was refused for good, or an
	// outbox file or mail was set aside: the guest did not get it. Fires
	// at once; the subject names the request or the file.
	Undeliverable Kind = "undeliverable"
	// RequestError: a request's error has persisted longer than
	// [Options.RequestErrorAfter]; the subject names the request.
	RequestError Kind = "request-error"
	// Deadline: a request's deadline passed, or is near, while nobody on
	// the helpdesk side answered; it goes to the support targets. Fires
	// at once: the caller decides what "near" is
	// ([Config.DeadlineWarnBefore]).
	Deadline Kind = "deadline"
)

// Audience is who a kind of notice is for.
type Audience int

const (
	// Operators run the bridge: every kind but [Deadline].
	Operators Audience = iota
	// Support answers the guests: [Deadline]. Without support targets,
	// their notices go to the operators'.
	Support
)

// Audience of k.
func (k Kind) Audience() Audience {
	if k == Deadline {
		return Support
	}
	return Operators
}

// Phase is where in its episode a notice is.
type Phase string

// The phases of a notice.
const (
	Fired    Phase = "fired"
	Repeated Phase = "repeated"
	Resolved Phase = "resolved"
	Testing  Phase = "test"
)

// Notice is one message to the people: what [Target.Send] renders.
type Notice struct {
	Phase Phase
	Kind  Kind
	// Hotels the notice is about, sorted: one, or several sharing a cause.
	Hotels []string
	// Subject is what within the hotel: a request, a file; "" for the
	// hotel as a whole. With several hotels, the first one's.
	Subject string
	// Cause says what happened, e.g. "the API answered 503".
	Cause string
	// Fix says what to do, the same text check and the start errors give.
	Fix string
	// Since is when the condition started holding.
	Since time.Time
	// At is when the notice was decided.
	At time.Time
	// StatusURL is the status page's external address; "" for none.
	StatusURL string
}

// Title is the notice's one-line summary.
func (n Notice) Title() string {
	who := n.who()
	what := kindText(n.Kind)
	switch n.Phase {
	case Resolved:
		return fmt.Sprintf("Back to normal: %s (%s)", who, what)
	case Testing:
		return "ticketbridge test notice"
	case Repeated:
		return fmt.Sprintf("Still: %s for %s", what, who)
	}
	return fmt.Sprintf("%s for %s", capital(what), who)
}

// who names the hotels (and the subject of a single one).
func (n Notice) who() string {
	var b strings.Builder
	switch len(n.Hotels) {
	case 0:
		b.WriteString("the bridge")
	case 1:
		b.WriteString("hotel " + n.Hotels[0])
	default:
		fmt.Fprintf(&b, "%d hotels (%s)", len(n.Hotels), strings.Join(n.Hotels, ", "))
	}
	if n.Subject != "" && len(n.Hotels) <= 1 {
		b.WriteString(", " + n.Subject)
	}
	return b.String()
}

// Lines are the notice's body, one fact a line: what, since when, what to
// do, where to look.
func (n Notice) Lines() []string {
	if n.Phase == Testing {
		return []string{"This is a test notice from ticketbridge: this target works.", "Sent " + n.At.UTC().Format(time.RFC3339) + "."}
	}
	var out []string
	switch len(n.Hotels) {
	case 0:
	case 1:
		out = append(out, "Hotel: "+n.Hotels[0])
	default:
		out = append(out, "Hotels: "+strings.Join(n.Hotels, ", "))
	}
	if n.Subject != "" {
		out = append(out, "About: "+n.Subject)
	}
	if n.Cause != "" {
		out = append(out, "What happened: "+n.Cause)
	}
	if !n.Since.IsZero() {
		since := "Since: " + n.Since.UTC().Format("2006-01-02 15:04 UTC")
		if d := n.At.Sub(n.Since); d >= time.Minute {
			since += " (" + roughly(d) + ")"
		}
		out = append(out, since)
	}
	if n.Phase == Resolved {
		out = append(out, "It is back to normal: nothing to do.")
	} else if n.Fix != "" {
		out = append(out, "What to do: "+n.Fix)
	}
	if n.StatusURL != "" {
		out = append(out, "Status page: "+n.StatusURL)
	}
	return out
}

// Text is the title and the lines, for plain-text targets.
func (n Notice) Text() string {
	return n.Title() + "\n\n" + strings.Join(n.Lines(), "\n") + "\n"
}

// Severity is 1 (quiet) to 5 (urgent), as ntfy's priorities.
func (n Notice) Severity() int {
	switch {
	case n.Phase == Resolved, n.Phase == Testing:
		return 2
	case n.Kind == KeyRefused, n.Kind == CyclesFailing:
		return 5
	case n.Phase == Repeated:
		return 3
	}
	return 4
}

func kindText(k Kind) string {
	switch k {
	case CyclesFailing:
		return "cycles failing"
	case KeyRefused:
		return "API key refused"
	case Undeliverable:
		return "not delivered to the guest"
	case RequestError:
		return "a request's error persists"
	case Deadline:
		return "deadline"
	}
	return string(k)
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// roughly says a duration the way a person would: "2h 5m", "3 days".
func roughly(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
	case d >= time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%d min", int(d/time.Minute))
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
