package main

//lint:file-ignore SA1019 The SDK deprecates the classic dashboard model for v2, which Grafana imports only from 12 on and behind a feature flag; the classic JSON is what every Grafana imports.

import (
	"encoding/json"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Grafana unit ids, one on every panel.
const (
	unitCount   = "none"        // calls, tokens, ratios without a unit
	unitSeconds = "s"           // latencies
	unitRate    = "reqps"       // calls per second
	unitPercent = "percentunit" // a ratio in [0, 1] shown as a percentage
)

// The range of rate() and *_over_time(): Grafana sets $__rate_interval from
// the data source's scrape interval and the panel's resolution.
const window = "[$__rate_interval]"

// sel is the selector every query of a gate's series starts from: the
// chosen job, the chosen gates, side client (a floodhttp.Handler's limiter
// series share the names, with side server), and extra matchers if any.
func sel(extra ...string) string { return selSide("client", extra...) }

// serverSel is sel for the series of floodhttp Handlers (side server).
func serverSel(extra ...string) string { return selSide("server", extra...) }

func selSide(side string, extra ...string) string {
	return "{" + strings.Join(append([]string{`job="$job"`, `gate=~"$gate"`, `side="` + side + `"`}, extra...), ", ") + "}"
}

var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// query is one PromQL target of a panel; Grafana draws a line per series,
// named by legend.
type query struct{ expr, legend string }

func targets(qs ...query) []cog.Builder[variants.Dataquery] {
	var ts []cog.Builder[variants.Dataquery]
	for i, q := range qs {
		ts = append(ts, prometheus.NewDataqueryBuilder().
			RefId(string(rune('A'+i))).
			Datasource(datasource).
			Expr(q.expr).
			LegendFormat(q.legend).
			Range())
	}
	return ts
}

// graph is a time series panel with the settings every graph here shares.
func graph(title, unit, description string, qs ...query) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unit).
		Min(0).
		Height(8).
		Span(12).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"lastNotNull", "max"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)).
		Targets(targets(qs...))
}

// dashedAt draws a dashed threshold line at v, the alert rule's threshold.
func dashedAt(p *timeseries.PanelBuilder, v float64) *timeseries.PanelBuilder {
	return p.
		Thresholds(dashboard.NewThresholdsConfigBuilder().
			Mode(dashboard.ThresholdsModeAbsolute).
			Steps([]dashboard.Threshold{{Value: nil, Color: "green"}, {Value: cog.ToPtr(v), Color: "red"}})).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
}

// valueText maps the value v of a state timeline to text in color.
func valueText(v, text, color string) dashboard.ValueMapping {
	return dashboard.ValueMapping{ValueMap: &dashboard.ValueMap{
		Type:    dashboard.MappingTypeValueToText,
		Options: map[string]dashboard.ValueMappingResult{v: {Text: cog.ToPtr(text), Color: cog.ToPtr(color)}},
	}}
}

// timeline is a state timeline panel, one row per series, its values
// mapped to text by mappings.
func timeline(title, description string, mappings []dashboard.ValueMapping, q query) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unitCount).
		Height(8).
		Span(12).
		ShowValue(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true)).
		Tooltip(common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle).Sort(common.SortOrderNone)).
		MergeValues(true).
		Mappings(mappings).
		Targets(targets(q))
}

func breakerTimeline() *statetimeline.PanelBuilder {
	return timeline("Breaker state",
		"One row per gate and instance: closed (calls go through), half-open (a few probe calls test the downstream), "+
			"open (every call is refused at once with ErrOpen and a retry-after hint). Open means the downstream failed or was slow "+
			"for most calls of the breaker's window; see the RTT and error ratio panels for which.",
		[]dashboard.ValueMapping{
			valueText("0", "closed", "green"),
			valueText("1", "half-open", "yellow"),
			valueText("2", "open", "red"),
		},
		query{
			// 0 closed, 1 half-open, 2 open: one series per gate and instance.
			expr: `max by (gate, instance) (floodgate_breaker_state` + sel(`state="half_open"`) + `)` +
				` + 2 * max by (gate, instance) (floodgate_breaker_state` + sel(`state="open"`) + `)`,
			legend: "{{gate}} {{instance}}",
		})
}

// fleetSel selects the process-wide series of package fleet (no gate
// label): the chosen job, side client.
const fleetSel = `{job="$job", side="client"}`

// fleetRow is the title of the row of fleet mode's panels (package fleet's
// Collector); scripts/e2e-fleet.sh checks its queries, the only ones
// without series in the slowdown example's run.
const fleetRow = "Fleet mode: budget / breaker / cap shared through Redis (package fleet)"

func build() (dashboard.Dashboard, error) {
	// Little's Law on the downstream: attempts/s × mean attempt time =
	// rate of the attempt-time sum = mean attempts the downstream holds.
	attemptSeconds := "rate(floodgate_attempt_duration_seconds_sum" + sel() + window + ")"
	attemptCount := "rate(floodgate_attempt_duration_seconds_count" + sel() + window + ")"
	callRate := "rate(floodgate_calls_total" + sel() + window + ")"
	byInstance := func(expr string) string { return "sum by (gate, instance) (" + expr + ")" }
	byGate := func(expr string) string { return "sum by (gate) (" + expr + ")" }

	inFlight := graph("In-flight vs limit", unitCount,
		"Per gate and instance. limit: how many calls the adaptive limiter admits at once; in-flight: calls holding a slot at the scrape; "+
			"peak: the most in flight since the previous scrape. Downstream demand (Little's Law) = attempts/s × mean attempt time = the mean number "+
			"of attempts the downstream was holding; offered demand = all user calls/s × mean attempt time = what in-flight would be without the limiter. "+
			"A slowdown shows as the limit falling while offered demand rises: floodgate keeps in-flight at the limit and sheds the rest.",
		query{"max by (gate, instance) (floodgate_limit" + sel() + ")", "{{gate}} {{instance}} limit"},
		query{"max by (gate, instance) (floodgate_in_flight" + sel() + ")", "{{gate}} {{instance}} in-flight"},
		query{"max by (gate, instance) (floodgate_in_flight_peak" + sel() + ")", "{{gate}} {{instance}} in-flight peak"},
		query{byInstance(attemptSeconds), "{{gate}} {{instance}} downstream demand (Little's Law)"},
		query{byInstance(callRate) + " * " + byInstance(attemptSeconds) + " / " + byInstance(attemptCount), "{{gate}} {{instance}} offered demand"},
	)

	shed := graph("Shed rate by reason", unitRate,
		"User calls that floodgate ended for a reason of its own, per second, by reason: shed (the limiter was full), open (the breaker "+
			"was open), budget_exhausted (a retry was needed but the retry budget was empty), deadline (the call's deadline passed, or the next retry could not "+
			"finish before it). shed and open calls usually never reached the downstream; budget_exhausted and deadline calls made at least one attempt "+
			"that failed. 'all calls' is every user call, for scale. Shedding is floodgate doing its job during a "+
			"slowdown; shedding while the RTT is normal means the callers outgrew the limit (scale out, see Utilisation).",
		query{"sum by (gate, outcome) (rate(floodgate_calls_total" + sel(`outcome=~"shed|open|budget_exhausted|deadline"`) + window + "))", "{{gate}} {{outcome}}"},
		query{byGate(callRate), "{{gate}} all calls"},
	)

	rtt := graph("RTT: baseline, min, recent, and mean attempt time", unitSeconds,
		"baseline: the limit algorithm's no-load RTT, the one it compares each window's RTT against; it falls at once and rises "+
			"only when a cut shows the higher RTT is not a queue of ours (Gradient), so a queue shows as recent far above baseline, and the limit falls when recent passes 1.5x baseline. "+
			"min and recent: the smallest and the mean RTT of the successes of the limiter's last window that had any (per instance). "+
			"Recent well above min = the RTTs spread out, a queue is building. Both keep their last value while no call succeeds "+
			"(every attempt timing out), so read them with the mean attempt time: every attempt that reached the downstream, "+
			"timeouts and errors included, from the attempt histogram. Mean attempt time rising = the downstream got slower; "+
			"the limit falls in proportion.",
		query{"max by (gate, instance) (floodgate_rtt_baseline_seconds" + sel() + ")", "{{gate}} {{instance}} baseline"},
		query{"max by (gate, instance) (floodgate_rtt_min_seconds" + sel() + ")", "{{gate}} {{instance}} min"},
		query{"max by (gate, instance) (floodgate_rtt_recent_seconds" + sel() + ")", "{{gate}} {{instance}} recent"},
		query{byGate(attemptSeconds) + " / " + byGate(attemptCount), "{{gate}} mean attempt time"},
	)

	latency := graph("Call latency p50 / p99", unitSeconds,
		"Of user calls that reached the downstream at least once, from the first attempt's start to Guard's return, retries and backoff "+
			"included (calls refused at once are not in it: see Shed rate). attempt p99: one attempt's RTT. With an attempt timeout of 1 s "+
			"and a 2 s deadline, p99 stays near those bounds however slow the downstream gets: that is the point.",
		query{"histogram_quantile(0.5, sum by (gate, le) (rate(floodgate_call_duration_seconds_bucket" + sel() + window + ")))", "{{gate}} p50"},
		query{"histogram_quantile(0.99, sum by (gate, le) (rate(floodgate_call_duration_seconds_bucket" + sel() + window + ")))", "{{gate}} p99"},
		query{"histogram_quantile(0.99, sum by (gate, le) (rate(floodgate_attempt_duration_seconds_bucket" + sel() + window + ")))", "{{gate}} attempt p99"},
	)

	errRatio := dashedAt(graph("Error ratio", unitPercent,
		"Share of user calls that did not succeed, whatever the reason (failure, shed, open, budget_exhausted, deadline); calls the "+
			"caller canceled itself are left out of both sides. Compare with Shed rate: a high ratio made of sheds and open-breaker refusals "+
			"is fast failure by design; one made of failures and deadlines is the downstream's errors reaching the users.",
		query{byGate("rate(floodgate_calls_total"+sel(`outcome!~"success|canceled"`)+window+")") + " / " +
			byGate("rate(floodgate_calls_total"+sel(`outcome!="canceled"`)+window+")"), "{{gate}} not successful"},
	), 0.05).Max(1)

	amplification := dashedAt(graph("Amplification (attempts per user call)", unitCount,
		"Attempts that reached the downstream per user call. 1 = no retries; below 1 = calls refused at once (shed, open) never reach the "+
			"downstream; above 1 = retries. The retry budget caps retries at 10% of calls plus a burst of 20, so a sustained value above "+
			"1.1 means the budget was raised or bypassed. The dashed line is the alert threshold (1.5).",
		query{byGate("rate(floodgate_attempts_total"+sel()+window+")") + " / " + byGate(callRate), "{{gate}} attempts per call"},
		query{byGate("rate(floodgate_attempts_total"+sel(`attempt="retry"`)+window+")") + " / " + byGate(callRate), "{{gate}} retries per call"},
	), 1.5)

	budget := graph("Retry budget tokens", unitCount,
		"Tokens left in each retry budget: each call earns 0.1, each retry spends 1, at most 20 are kept (defaults). "+
			"Near 0 = retries are being refused (outcome budget_exhausted): the downstream is failing for long enough that retrying would "+
			"only add load.",
		query{"min by (gate, instance) (floodgate_retry_budget_tokens" + sel() + ")", "{{gate}} {{instance}}"},
	)

	fleet := graph("Fleet totals (all instances)", unitCount,
		"Summed over every instance of the job, per gate: this is what the downstream sees. A limit of 10 per replica × 20 replicas is "+
			"200 calls on the downstream. Σ downstream demand is Little's Law over the fleet (attempts/s × mean attempt time).",
		query{"sum by (gate) (floodgate_limit" + sel() + ")", "{{gate}} Σ limit"},
		query{"sum by (gate) (floodgate_in_flight" + sel() + ")", "{{gate}} Σ in-flight"},
		query{byGate(attemptSeconds), "{{gate}} Σ downstream demand (Little's Law)"},
		query{"count by (gate) (floodgate_limit" + sel() + ")", "{{gate}} instances"},
	)

	utilisation := dashedAt(graph("Utilisation (in-flight / limit): the autoscaling signal", unitPercent,
		"fleet: the job's calls in flight over its summed limits, per gate, at each scrape (the recording rule "+
			"job_gate:floodgate_utilisation:ratio); peak: the busiest instance's peak in-flight since the previous scrape over its limit. "+
			"At 100% the limiter is full and sheds. Near 100% with a normal attempt time = the callers need more capacity: "+
			"scale out. Near 100% with a rising attempt time = the downstream slowed: more replicas would not help it (see docs/operations.md).",
		query{"sum by (gate) (floodgate_in_flight" + sel() + ") / sum by (gate) (floodgate_limit" + sel() + ")", "{{gate}} fleet"},
		query{"max by (gate) (max_over_time(floodgate_in_flight_peak" + sel() + window + ") / max_over_time(floodgate_limit" + sel() + window + "))", "{{gate}} peak (busiest instance)"},
	), 0.9)

	hidden := graph("HTTP client: hidden retries", unitRate,
		"Per gate with a floodhttp.Transport: requests that net/http's Transport re-sent on its own within one attempt, per second, unseen "+
			"by the gate (a request that failed on a reused keep-alive connection before any answer, sent again on a new one). Each is one "+
			"request more on the wire than the attempts count. A burst after the server restarts or drops idle connections is expected (at "+
			"most one per stale pooled connection); a steady rate means the idle timeouts disagree: set the server's idle timeout above the "+
			"client's IdleConnTimeout. attempts: the gate's attempts per second, for scale (the alert FloodgateHiddenRetries fires above 1% of "+
			"them for 15 minutes).",
		query{byGate("rate(floodgate_http_hidden_retries_total" + sel() + window + ")"), "{{gate}} hidden retries"},
		query{byGate("rate(floodgate_attempts_total"+sel()+window+")") + " and on (gate) " +
			byGate("rate(floodgate_http_hidden_retries_total"+sel()+window+")"), "{{gate}} attempts"},
	)

	serverLimit := graph("HTTP server: in-flight vs limit", unitCount,
		"Per floodhttp.Handler (its name in the gate label) and instance: limit, how many requests its adaptive limiter admits at once; "+
			"in-flight, requests being served at the scrape; peak, the most since the previous scrape. In-flight at the limit means the "+
			"Handler sheds (next panel). The limit falls when the handler's latency inflates or its requests run out of time; a handler slowed "+
			"by what it calls shows here and in the panels above of the gate it calls through.",
		query{"max by (gate, instance) (floodgate_limit" + serverSel() + ")", "{{gate}} {{instance}} limit"},
		query{"max by (gate, instance) (floodgate_in_flight" + serverSel() + ")", "{{gate}} {{instance}} in-flight"},
		query{"max by (gate, instance) (floodgate_in_flight_peak" + serverSel() + ")", "{{gate}} {{instance}} in-flight peak"},
	)

	serverShed := graph("HTTP server: shed rate", unitRate,
		"Requests a floodhttp.Handler answered at once over its limit, with 503 (or 429) and Retry-After, per second: by Handler, and per "+
			"instance. The Handler counts no admitted requests: read its share from the server's own request metrics. A floodgate client "+
			"upstream sees these as overload answers and backs off by Retry-After.",
		query{byGate("rate(floodgate_http_shed_total" + serverSel() + window + ")"), "{{gate}} shed"},
		query{byInstance("rate(floodgate_http_shed_total" + serverSel() + window + ")"), "{{gate}} {{instance}} shed"},
	)

	fleetTokens := graph("Fleet: shared retry budget tokens", unitCount,
		"Per gate: the tokens in the gate's fleet bucket in Redis, shared by every instance of the job (fleet.Collector's "+
			"floodgate_fleet_budget_tokens, as the instances read it at their last successful sync, at most the fleet's Interval "+
			"old; the lowest and the highest reading). Each sync moves what an instance earned above its Lease into the bucket "+
			"(up to Max, 20 by default) and tops its lease up from it. Near 0 = the fleet has spent its shared retries: "+
			"retries are refused fleet-wide (outcome budget_exhausted). Σ local: the tokens the instances hold themselves, "+
			"about instances × Lease.",
		query{"min by (gate) (floodgate_fleet_budget_tokens" + sel() + ")", "{{gate}} bucket (lowest reading)"},
		query{"max by (gate) (floodgate_fleet_budget_tokens" + sel() + ")", "{{gate}} bucket (highest reading)"},
		query{"sum by (gate) (floodgate_retry_budget_tokens" + sel() + ") and on (gate) max by (gate) (floodgate_fleet_budget_tokens" +
			sel() + ")", "{{gate}} Σ local"},
	)

	fleetState := timeline("Fleet: mode per instance",
		"One row per instance and fleet (Config.Prefix): shared (its last sync with Redis succeeded) or local (Redis failed, "+
			"timed out, or was not reached yet: its gates spend their own budgets, as without fleet mode, and the fleet may "+
			"retry up to instances × LocalMax more). The alert FloodgateFleetLocal fires when an instance stays local for 1 minute.",
		[]dashboard.ValueMapping{
			valueText("0", "local", "orange"),
			valueText("1", "shared", "green"),
		},
		query{"max by (instance, fleet) (floodgate_fleet_shared" + fleetSel + ")", "{{instance}} {{fleet}}"})

	fleetFallbacks := graph("Fleet: fallbacks to local mode", unitRate,
		"Per instance: how often per second it fell back to local mode because a sync with Redis failed or timed out "+
			"(floodgate_fleet_fallbacks_total; a stretch of failed syncs counts once). Each one is logged. Several instances "+
			"at once = Redis (or the way to it) failed; one alone = that instance's network.",
		query{"sum by (instance) (rate(floodgate_fleet_fallbacks_total" + fleetSel + window + "))", "{{instance}} fallbacks"},
	)

	fleetBreaker := timeline("Fleet: shared breaker",
		"Per gate: the fleet's breaker, decided in Redis on the summed window counts of every instance (fleet.Collector's "+
			"floodgate_fleet_breaker_state, the worst reading of the instances): closed; open (every instance is held open and "+
			"answers ErrOpen without calling the downstream, whatever its own breaker says); half-open (one instance probes). "+
			"An instance whose own path is broken trips its own breaker (Breaker state panel) without opening this one.",
		[]dashboard.ValueMapping{
			valueText("0", "closed", "green"),
			valueText("1", "half-open", "yellow"),
			valueText("2", "open", "red"),
		},
		query{"max by (gate) (floodgate_fleet_breaker_state" + sel() + ")", "{{gate}} fleet"})

	fleetHeld := graph("Fleet: instances held open by the shared breaker", unitCount,
		"Per gate: how many instances the fleet's breaker holds open (floodgate_fleet_breaker_held), out of the instances "+
			"that share it. All of them while it is open, all but the prober while half-open, 0 while closed or while the "+
			"instances are local (Redis unreachable: each breaker decides alone).",
		query{"sum by (gate) (floodgate_fleet_breaker_held" + sel() + ")", "{{gate}} held"},
		query{"count by (gate) (floodgate_fleet_breaker_held" + sel() + ")", "{{gate}} instances"},
	)

	fleetCap := graph("Fleet: concurrency cap shares", unitCount,
		"Per gate, with fleet.Config.FleetLimit: the caps the instances' limiters hold (floodgate_fleet_limit_share), "+
			"summed (at most FleetLimit, plus 1 for each instance joining a full fleet) and per instance, and the live "+
			"instances dividing it (floodgate_fleet_live_processes). An instance that stops heartbeating leaves the count "+
			"one lifetime after its last sync (HeartbeatTTL, 1 s by default, or more with a slow round of syncs) and its share goes "+
			"to the others one lifetime later; while Redis is unreachable each keeps its last share.",
		query{"sum by (gate) (floodgate_fleet_limit_share" + sel() + ")", "{{gate}} Σ caps"},
		query{"max by (gate, instance) (floodgate_fleet_limit_share" + sel() + ")", "{{gate}} {{instance}} cap"},
		query{"max by (gate) (floodgate_fleet_live_processes" + sel() + ")", "{{gate}} live instances"},
	)

	// Panel ids in layout order, rows included: Grafana wants them unique.
	id := uint32(0)
	next := func() uint32 { id++; return id }
	row := func(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title).Id(next()) }

	return dashboard.NewDashboardBuilder("floodgate").
		Uid("floodgate").
		Description("floodgate gates: adaptive concurrency limit, shedding, circuit breaker, retries. Generated by github.com/floodgate-go/floodgate/dashboard; see docs/operations.md.").
		Tags([]string{"floodgate", "resilience"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("job").
			Label("Job").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(floodgate_limit, job)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc)).
		WithVariable(dashboard.NewQueryVariableBuilder("gate").
			Label("Gate").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr(`label_values(floodgate_limit{job="$job"}, gate)`)}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			Current(dashboard.VariableOption{
				Text:  dashboard.StringOrArrayOfString{ArrayOfString: []string{"All"}},
				Value: dashboard.StringOrArrayOfString{ArrayOfString: []string{"$__all"}},
			})).
		WithRow(row("Is the downstream slow, and is floodgate shedding?")).
		WithPanel(inFlight.Id(next())).
		WithPanel(shed.Id(next())).
		WithPanel(breakerTimeline().Id(next())).
		WithPanel(rtt.Id(next())).
		WithRow(row("What the callers get")).
		WithPanel(latency.Id(next())).
		WithPanel(errRatio.Id(next())).
		WithPanel(amplification.Id(next())).
		WithPanel(budget.Id(next())).
		WithRow(row("Fleet and capacity")).
		WithPanel(fleet.Id(next())).
		WithPanel(utilisation.Id(next())).
		WithRow(row("HTTP: floodhttp servers and client transports")).
		WithPanel(serverLimit.Id(next())).
		WithPanel(serverShed.Id(next())).
		WithPanel(hidden.Id(next())).
		WithRow(row(fleetRow)).
		WithPanel(fleetTokens.Id(next())).
		WithPanel(fleetState.Id(next())).
		WithPanel(fleetFallbacks.Id(next())).
		WithPanel(fleetBreaker.Id(next())).
		WithPanel(fleetHeld.Id(next())).
		WithPanel(fleetCap.Id(next())).
		Build()
}

// generate returns the dashboard as the indented JSON committed at
// docs/grafana/floodgate.json, ending with a newline.
func generate() ([]byte, error) {
	d, err := build()
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
