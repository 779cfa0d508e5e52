package telemetry

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	gosync "sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// maxScrapes is how many scrapes of /metrics are answered at once; one
// more is refused with 503, as promhttp's MaxRequestsInFlight does.
const maxScrapes = 4

// exposition serves /metrics: the process's series, from the daemon's
// registry, and the hotels' (a daemon of one hotel's without a hotel
// label).
//
// promhttp takes the whole exposition from a Gatherer before it sends a
// byte: at 2,000 hotels the families of every hotel's series held 66 MB
// at once, room the heap had to find at every scrape and kept at the
// collector's goal after it. This handler sends the daemon's own families
// and, merged with them in name order, each family of the hotels' series
// as soon as it is built, so that a scrape holds one family at a time
// (see BenchmarkScrape's held-MB); in the text format, which is what
// Prometheus asks for, it writes each family straight from the samples
// (textWriter) and builds nothing. Otherwise it answers as promhttp's
// handler does: the formats expfmt negotiates from Accept, gzip when
// Accept-Encoding asks for it, at most maxScrapes at once, and on an
// error gathering the daemon's own series, whatever was gathered.
type exposition struct {
	t        *Telemetry
	inFlight chan struct{}
}

func (t *Telemetry) exposition() http.Handler {
	return &exposition{t: t, inFlight: make(chan struct{}, maxScrapes)}
}

func (e *exposition) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case e.inFlight <- struct{}{}:
		defer func() { <-e.inFlight }()
	default:
		http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", maxScrapes), http.StatusServiceUnavailable)
		return
	}
	log := e.t.log.With(slog.String("op", "metrics"))
	own, err := e.t.reg.Gather()
	if err != nil {
		log.Warn("gather the daemon's series; the scrape has the rest", slog.Any("error", err))
	}
	hotels, labelled := e.t.hotelSeries()
	format := expfmt.NegotiateAccept(r.Header, expfmt.DefaultAcceptedFormats()...)
	h := w.Header()
	h.Add("Vary", "Accept")
	h.Add("Vary", "Accept-Encoding")
	h.Set("Content-Type", string(format))
	var out io.Writer = w
	if acceptsGzip(r.Header) {
		h.Set("Content-Encoding", "gzip")
		gz := gzipWriters.Get().(*gzip.Writer)
		gz.Reset(w)
		defer func() {
			_ = gz.Close() // an error here is the client's going, as an Encode's
			gzipWriters.Put(gz)
		}()
		out = gz
	}
	var send func(*dto.MetricFamily) error
	var sendHotels func(hotelFamily) error
	var closeEnc func() error
	if format.FormatType() == expfmt.TypeTextPlain {
		// Prometheus's own scrapes: written straight from the samples.
		tw := &textWriter{w: bufio.NewWriterSize(out, 32<<10), hotel: labelled}
		send = func(mf *dto.MetricFamily) error {
			_, err := expfmt.MetricFamilyToText(tw.w, mf)
			return err
		}
		sendHotels = func(hf hotelFamily) error { return tw.family(hf, hotels) }
		closeEnc = tw.w.Flush
	} else {
		enc := expfmt.NewEncoder(out, format)
		labels := hotelLabels(hotels, labelled)
		send = enc.Encode
		sendHotels = func(hf hotelFamily) error {
			if mf := hf.gather(hotels, labels); mf != nil {
				return enc.Encode(mf)
			}
			return nil // no hotel has a series of it
		}
		closeEnc = func() error {
			if c, ok := enc.(expfmt.Closer); ok {
				return c.Close()
			}
			return nil
		}
	}
	next := hotelFamilies
	for len(own) > 0 || len(next) > 0 {
		var err error
		if len(next) == 0 || len(own) > 0 && own[0].GetName() < next[0].f.name {
			err, own = send(own[0]), own[1:]
		} else {
			err, next = sendHotels(next[0]), next[1:]
		}
		if err != nil {
			log.Warn("send the metrics", slog.Any("error", err))
			return
		}
	}
	if err := closeEnc(); err != nil {
		log.Warn("send the metrics", slog.Any("error", err))
	}
}

var gzipWriters = gosync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// acceptsGzip reports whether an Accept-Encoding of h takes gzip (or any
// encoding, "*") at a quality above 0.
func acceptsGzip(h http.Header) bool {
	for _, v := range h.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(part, ";")
			name = strings.TrimSpace(name)
			if !strings.EqualFold(name, "gzip") && name != "*" {
				continue
			}
			q := 1.0
			for p := range strings.SplitSeq(params, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
					if f, err := strconv.ParseFloat(val, 64); err == nil {
						q = f
					}
				}
			}
			if q > 0 {
				return true
			}
		}
	}
	return false
}
