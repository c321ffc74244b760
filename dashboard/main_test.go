package main

//lint:file-ignore SA1019 see dashboard.go: the classic dashboard model is the one generated.

import (
	"bytes"
	"os"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
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
