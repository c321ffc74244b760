// Package metrics exports floodgate gates to Prometheus.
//
// A [Collector] is a prometheus.Collector for any number of gates. Create
// one, register it on the registry of your choice, and pass
// [Collector.Observe] to [floodgate.New] for each gate:
//
//	c := metrics.NewCollector()
//	reg.MustRegister(c)
//	gate, err := floodgate.New("shipping-quote", c.Observe())
//
// The gauges (limit, in-flight, RTTs, breaker state, budget tokens) are read
// from the gate's atomics at scrape time; the counters and histograms are
// updated by the gate's [floodgate.Observer] calls, with no map lookup and no
// allocation per call. Every series has the labels gate (the gate's name)
// and side ("client" for a gate, "server" for a floodhttp Handler, below);
// the only other labels are fixed enums (outcome, attempt, state, from,
// to), so the series count is bounded by the number of gates and Handlers.
//
// Package floodhttp's Transport and Handler are exported too, read at
// scrape time from their atomics (nothing is added to their requests):
// [Collector.ObserveTransport] adds a Transport's hidden retries to its
// Gate's series (side client), and [Collector.ObserveHandler] exports a
// server Handler, which has an adaptive limiter but no Gate, under a name
// of your choice with side server: the limiter series (limit, in_flight,
// in_flight_peak, rtt_*) and http_shed_total. Add side="client" to a
// query of those that must see only gates.
//
// Metrics, all prefixed floodgate_ (a Handler's: the limiter's six and
// http_shed_total):
//
//	limit                          gauge    current concurrency limit (calls)
//	in_flight                      gauge    calls holding a limiter slot now
//	in_flight_peak                 gauge    highest in-flight since the previous scrape
//	rtt_min_seconds                gauge    smallest RTT of a success, last limiter window
//	rtt_recent_seconds             gauge    mean RTT of successes, last limiter window
//	rtt_baseline_seconds           gauge    the limit algorithm's no-load RTT baseline (0 for AIMD, Fixed)
//	breaker_state{state}           gauge    1 for the breaker's state, 0 for the others (closed, half_open, open)
//	retry_budget_tokens            gauge    retry budget tokens left (0..Max)
//	calls_total{outcome}           counter  user calls by outcome (success, failure, shed, open, budget_exhausted, deadline, canceled)
//	attempts_total{attempt}        counter  attempts that reached the downstream (first, retry)
//	breaker_transitions_total{from,to} counter breaker state changes
//	call_duration_seconds          histogram user calls that reached the downstream, first attempt start to return
//	attempt_duration_seconds       histogram each attempt's RTT
//	http_hidden_retries_total      counter  a gate's floodhttp Transports' hidden retries (side client)
//	http_shed_total                counter  requests a floodhttp Handler shed (side server)
//
// The histograms have classic buckets from 1 ms to 30 s ([Buckets]) and
// native (sparse) buckets with a growth factor of 1.1.
//
// By Little's Law, rate(floodgate_attempt_duration_seconds_sum) is the mean
// number of attempts in flight at the downstream: the demand that the limit
// is set against.
package metrics
