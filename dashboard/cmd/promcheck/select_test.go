package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// -rows, -skip-rows, -groups and -skip-groups: a row's panels are the
// panels after its row panel, a collapsed row's nested ones included; a
// name that matches nothing, or a selection that leaves nothing, is an
// error, not a pass with 0 queries run.
func TestCheckSelectsRows(t *testing.T) {
	const dash = `{"panels": [
  {"type": "timeseries", "title": "top", "targets": [{"refId": "A", "expr": "a"}]},
  {"type": "row", "title": "One", "panels": []},
  {"type": "timeseries", "title": "p1", "targets": [{"refId": "A", "expr": "b"}, {"refId": "B", "expr": "c"}]},
  {"type": "row", "title": "Two", "collapsed": true, "panels": [
    {"type": "timeseries", "title": "p2", "targets": [{"refId": "A", "expr": "d"}]}]}
]}`
	dir := t.TempDir()
	dashPath, rules := filepath.Join(dir, "dashboard.json"), filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(dashPath, []byte(dash), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, []byte(rulesYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ts, err := readDashboard(dashPath)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tg := range ts {
		got = append(got, tg.row+"/"+tg.panel+"/"+tg.expr)
	}
	if want := "[/top/a One/p1/b One/p1/c Two/p2/d]"; fmt.Sprint(got) != want {
		t.Errorf("targets %v, want %s", got, want)
	}
	srv := fakePrometheus(t)
	for _, tc := range []struct {
		args    []string
		wantErr bool
	}{
		{nil, false},
		{[]string{"-rows", "Two"}, false},
		{[]string{"-rows", "One,Two", "-skip-rows", "Two"}, false},
		{[]string{"-skip-rows", "One"}, false},
		{[]string{"-rows", "Three"}, true},
		{[]string{"-skip-rows", "Three"}, true},
		{[]string{"-rows", "One", "-skip-rows", "One"}, true},
		{[]string{"-groups", "g"}, false},
		{[]string{"-groups", "nope"}, true},
		{[]string{"-skip-groups", "g"}, true},
	} {
		err := checkCmd(append([]string{"-url", srv.URL, "-dashboard", dashPath, "-rules", rules}, tc.args...))
		if (err != nil) != tc.wantErr {
			t.Errorf("check %q: error %v, want an error: %v", tc.args, err, tc.wantErr)
		}
	}
	s := parseSelection("a, b", "b")
	if !s.has("a") || s.has("b") || s.has("c") || !parseSelection("", "").has("x") {
		t.Errorf("parseSelection: %+v", s)
	}
}
