package fleet

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ticketbridge/ticketbridge/internal/notify"
)

// The notifications' series, by the kind of target (slack, teams,
// gchat, webhook, ntfy, mailto): a bounded label, never a URL or host.
var (
	noticesSentDesc = prometheus.NewDesc("ticketbridge_notify_sent_total",
		"Notices the notification targets took, by the target's kind.", []string{"target_kind"}, nil)
	noticesFailedDesc = prometheus.NewDesc("ticketbridge_notify_failed_total",
		"Notices a notification target did not take after its retries, or that found its queue full, by the target's kind; the log names the target by kind and host.", []string{"target_kind"}, nil)
)

// noticeCollector reads the notifier's counters when /metrics is scraped.
type noticeCollector struct{ n *notify.Notifier }

func (c noticeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- noticesSentDesc
	ch <- noticesFailedDesc
}

func (c noticeCollector) Collect(ch chan<- prometheus.Metric) {
	sent, failed := map[string]uint64{}, map[string]uint64{}
	for _, t := range c.n.Counters().Targets {
		kind, _, _ := strings.Cut(t.Target, " ")
		sent[kind] += t.Sent
		failed[kind] += t.Failed
	}
	for kind, v := range sent {
		ch <- prometheus.MustNewConstMetric(noticesSentDesc, prometheus.CounterValue, float64(v), kind)
		ch <- prometheus.MustNewConstMetric(noticesFailedDesc, prometheus.CounterValue, float64(failed[kind]), kind)
	}
}
