package main

//lint:file-ignore SA1019 see dashboard.go: the classic dashboard model is the one generated.

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"gopkg.in/yaml.v3"
)

// TestCommittedDashboardIsGenerated fails when docs/grafana/floodgate.json
// is not what this generator produces: the dashboard is edited here, in Go,
// and the committed JSON regenerated, never edited by hand.
func TestCommittedDashboardIsGenerated(t *testing.T) {
	const path = "../docs/grafana/floodgate.json"
	want, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; generate it with: cd dashboard && go run . -out ../docs/grafana/floodgate.json", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the generator produces; regenerate it with: cd dashboard && go run . -out ../docs/grafana/floodgate.json", path)
	}
}

// TestEveryPanelHasAUnitAndQueries guards what an operator relies on: each
// panel says its unit and runs at least one query with a legend.
func TestEveryPanelHasAUnitAndQueries(t *testing.T) {
	d, err := build()
	if err != nil {
		t.Fatal(err)
	}
	panels := 0
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue // a row
		}
		panels++
		if p.Panel.FieldConfig == nil || p.Panel.FieldConfig.Defaults.Unit == nil || *p.Panel.FieldConfig.Defaults.Unit == "" {
			t.Errorf("panel %q has no unit", *p.Panel.Title)
		}
		if len(p.Panel.Targets) == 0 {
			t.Errorf("panel %q has no query", *p.Panel.Title)
		}
	}
	if panels < 10 {
		t.Errorf("%d panels, want at least 10", panels)
	}
}

// TestCommittedDashboardDecodesStrictly reads the committed JSON back with
// the SDK's strict decoder (unknown fields are errors) and validates it, as a
// check that it is a well-formed Grafana dashboard model.
func TestCommittedDashboardDecodesStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	b, err := os.ReadFile("../docs/grafana/floodgate.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard.Dashboard
	err = d.UnmarshalJSONStrict(b)
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		err = nil // v0.0.22 returns an empty cog.BuildErrors for no error
	}
	if err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	if err := d.Validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
}

// rawSeries matches a floodgate metric named in a PromQL expression (not a
// recorded series such as job_gate:floodgate_limit:sum) and its selector.
var rawSeries = regexp.MustCompile(`(^|[^:\w])(floodgate_\w+)(\{[^}]*\})?`)

// sideless returns the floodgate metrics of expr selected without a side
// matcher: a floodhttp.Handler's series share the limiter's names with
// side="server", so such a query would sum a Handler into a gate.
func sideless(expr string) []string {
	var bad []string
	for _, m := range rawSeries.FindAllStringSubmatch(expr, -1) {
		if !strings.Contains(m[3], `side="`) {
			bad = append(bad, m[2]+m[3])
		}
	}
	return bad
}

// Every query of the dashboard and of the rules file picks a side.
func TestEveryQueryPicksASide(t *testing.T) {
	d, err := build()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range d.Panels {
		if p.Panel == nil {
			continue
		}
		for _, tg := range p.Panel.Targets {
			q, ok := tg.(prometheus.Dataquery)
			if !ok {
				t.Fatalf("panel %q: target %T, want a Prometheus query", *p.Panel.Title, tg)
			}
			n++
			if bad := sideless(q.Expr); bad != nil {
				t.Errorf("panel %q: %v without a side matcher", *p.Panel.Title, bad)
			}
		}
	}
	b, err := os.ReadFile("../docs/prometheus/floodgate-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct{ Record, Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			n++
			if bad := sideless(r.Expr); bad != nil {
				t.Errorf("rule %s%s: %v without a side matcher", r.Record, r.Alert, bad)
			}
		}
	}
	t.Logf("%d expressions", n)
	if bad := sideless(`sum(floodgate_limit) + x{side="client"} + job_gate:floodgate_limit:sum`); len(bad) != 1 {
		t.Errorf("sideless self-check: %v, want [floodgate_limit]", bad)
	}
}
