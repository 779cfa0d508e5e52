package saas

import (
	"slices"
	"strings"

	"github.com/ticketbridge/ticketbridge/adapters"
)

// Tags the bridge keeps on the tickets of a helpdesk that has tags, in
// the same forms in each: the request's origin, set at creation
// ("origin_guest"), and the guest's rating ("guest_rating_4",
// "guest_rating_4_5" for 4.5), one at a time. Which origins a tag can
// hold is the helpdesk's to say (see each vendor's originTag).
const (
	OriginTagPrefix = "origin_"
	RatingTagPrefix = "guest_rating_"
)

// RatingText is rating r as its tag holds it after [RatingTagPrefix]: 4,
// 4_5; the form of [Values.Rating] for a helpdesk that keeps the rating in
// a tag.
func RatingText(r float64) string { return strings.ReplaceAll(adapters.FormatRating(r), ".", "_") }

// RatingOf returns the rating tags hold, as [RatingText] writes it; "" for
// none.
func RatingOf(tags []string) string {
	for _, t := range tags {
		if r, ok := strings.CutPrefix(t, RatingTagPrefix); ok {
			return r
		}
	}
	return ""
}

// WithRating returns tags with the rating's tag replaced by that of
// rating (a [RatingText]; "" removes it), never nil: the whole list a
// helpdesk whose update replaces the tags is to hold.
func WithRating(tags []string, rating string) []string {
	out := slices.DeleteFunc(slices.Clone(tags), func(s string) bool { return strings.HasPrefix(s, RatingTagPrefix) })
	if rating != "" {
		out = append(out, RatingTagPrefix+rating)
	}
	if out == nil {
		out = []string{}
	}
	return out
}

// CreateTags are the tags of a new ticket: those given (the configured
// tag), origin, the vendor's tag of the request's origin ("" for none),
// and the rating's when the request is rated already.
func CreateTags(tags []string, origin string, rating *float64) []string {
	tags = slices.Clone(tags)
	if origin != "" {
		tags = append(tags, origin)
	}
	if rating != nil {
		tags = append(tags, RatingTagPrefix+RatingText(*rating))
	}
	return tags
}
