package fleet

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floodgate-go/floodgate/retry"
)

// Collector is a prometheus.Collector exporting a [Fleet]'s mode, its
// fallbacks, its gates' fleet buckets and the fleet's breakers, next to the gates' own series of
// package metrics. Create one with [NewCollector] and register it. Every
// value is read at scrape time from the Fleet's atomics (its gate list
// under the Fleet's mutex, which Guard never takes): nothing is added to
// Guard's calls or to the sync. It is safe for concurrent use.
//
// Its series carry the label side="client", as every gate series of
// package metrics does, and fleet, the Fleet's Config.Prefix: two Fleets
// with different prefixes can be registered in one registry.
type Collector struct {
	f                       *Fleet
	shared, fallbacks, fill *prometheus.Desc
	share, live             *prometheus.Desc // the fleet-wide cap (cap.go)
	brState, brHeld         *prometheus.Desc // the shared breaker's
}

// NewCollector returns a Collector of f. It returns an error if f is nil
// or if f's Prefix is not valid UTF-8, as Prometheus label values must
// be. Registering two Collectors of one Fleet, or of two Fleets with the
// same Prefix, in one registry fails with a
// prometheus.AlreadyRegisteredError.
func NewCollector(f *Fleet) (*Collector, error) {
	if f == nil {
		return nil, errors.New("fleet: NewCollector: the Fleet is nil")
	}
	if !utf8.ValidString(f.s.Prefix) {
		return nil, fmt.Errorf("fleet: Prefix %q is not valid UTF-8, as Prometheus label values must be", f.s.Prefix)
	}
	labels := prometheus.Labels{"fleet": f.s.Prefix, "side": "client"}
	return &Collector{
		f: f,
		shared: prometheus.NewDesc("floodgate_fleet_shared",
			"Fleet mode of this process: 1 shared (its last sync with Redis succeeded), 0 local (before the first sync, "+
				"after a failed or timed-out sync until one succeeds, and after Close).", nil, labels),
		fallbacks: prometheus.NewDesc("floodgate_fleet_fallbacks_total",
			"Times this process fell back to local mode because a sync with Redis failed or timed out "+
				"(a stretch of failed syncs counts once).", nil, labels),
		fill: prometheus.NewDesc("floodgate_fleet_budget_tokens",
			"Retry budget tokens in the gate's fleet bucket in Redis, shared by every process of the fleet, as this process "+
				"read it at its last successful sync (at most Interval old while floodgate_fleet_shared is 1, older while it is 0); "+
				"absent before the first. The tokens this process holds locally are floodgate_retry_budget_tokens.",
			[]string{"gate"}, labels),
		share: prometheus.NewDesc("floodgate_fleet_limit_share",
			"Fleet-wide concurrency cap (Config.FleetLimit): the cap (calls in flight) the gate's limiter holds in this "+
				"process, its share of FleetLimit as of its last successful sync (1 from Attach until the first; the last "+
				"share while floodgate_fleet_shared is 0). Absent with the cap off or the gate not attached.",
			[]string{"gate"}, labels),
		live: prometheus.NewDesc("floodgate_fleet_live_processes",
			"Fleet-wide concurrency cap: the live processes (heartbeat within the lifetime it declared, HeartbeatTTL or more; this one included) that "+
				"divide the gate's FleetLimit, as this process counted them at its last successful sync; absent before the first.",
			[]string{"gate"}, labels),
		brState: prometheus.NewDesc("floodgate_fleet_breaker_state",
			"State of the gate's fleet breaker, decided in Redis on the summed counts of every process, as this process read it "+
				"at its last successful sync: 0 closed, 1 half-open (one process probes), 2 open. Applied only while "+
				"floodgate_fleet_shared is 1; absent for a gate not attached (Fleet.Attach) and before the first sync.",
			[]string{"gate"}, labels),
		brHeld: prometheus.NewDesc("floodgate_fleet_breaker_held",
			"1 while the fleet holds this process's breaker of the gate open (its calls refused with ErrOpen, but for the "+
				"prober's probes), 0 otherwise; for attached gates. The breaker's own state is floodgate_breaker_state.",
			[]string{"gate"}, labels),
	}, nil
}

// Describe sends the descriptors of the seven metrics c exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.shared
	ch <- c.fallbacks
	ch <- c.fill
	ch <- c.share
	ch <- c.live
	ch <- c.brState
	ch <- c.brHeld
}

// Collect sends the Fleet's state, its fallbacks, the fleet bucket of
// each gate that had a successful sync, the fleet breaker of each
// attached gate, and, with the fleet-wide cap on, each attached gate's
// cap and live processes.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	f := c.f
	shared := 0.0
	if f.State() == Shared {
		shared = 1
	}
	ch <- prometheus.MustNewConstMetric(c.shared, prometheus.GaugeValue, shared)
	ch <- prometheus.MustNewConstMetric(c.fallbacks, prometheus.CounterValue, float64(f.Fallbacks()))
	f.mu.Lock()
	names := make([]string, 0, len(f.gates))
	levels := make([]int64, 0, len(f.gates))
	var caps []capSeries
	brs := make([]*gate, 0, len(f.gates))
	for name, g := range f.gates {
		names = append(names, name)
		levels = append(levels, g.level.Load())
		brs = append(brs, g)
		if fg := g.fg.Load(); fg != nil && f.s.FleetLimit > 0 && utf8.ValidString(name) {
			caps = append(caps, capSeries{name, fg.Limiter().Cap(), g.cap.live.Load()})
		}
	}
	f.mu.Unlock()
	for _, cs := range caps {
		ch <- prometheus.MustNewConstMetric(c.share, prometheus.GaugeValue, float64(cs.cap), cs.name)
		if cs.live > 0 {
			ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(cs.live), cs.name)
		}
	}
	for i, name := range names {
		if !utf8.ValidString(name) {
			continue // a name Prometheus cannot carry
		}
		if levels[i] >= 0 { // else no sync yet
			ch <- prometheus.MustNewConstMetric(c.fill, prometheus.GaugeValue, float64(levels[i])/retry.CreditsPerToken, name)
		}
		fg := brs[i].fg.Load()
		if fg == nil {
			continue
		}
		if st := brs[i].brk.state.Load(); st > 0 {
			ch <- prometheus.MustNewConstMetric(c.brState, prometheus.GaugeValue, float64(st-1), name)
		}
		held := 0.0
		if fg.Breaker().Held() {
			held = 1
		}
		ch <- prometheus.MustNewConstMetric(c.brHeld, prometheus.GaugeValue, held, name)
	}
}

// capSeries is one attached gate's cap series, read under the Fleet's mutex.
type capSeries struct {
	name string
	cap  int
	live int64
}
