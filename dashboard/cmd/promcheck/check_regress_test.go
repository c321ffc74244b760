package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// fakePrometheus answers every range query with one series and lists the
// one rule of rulesYAML as loaded and healthy: a server on which every
// query "works", so that only what promcheck finds to check decides.
func fakePrometheus(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query_range", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"j","gate":"g"},"values":[[1,"1"]]}]}}`)
	})
	mux.HandleFunc("/api/v1/rules", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"groups":[{"name":"g","rules":[{"name":"job:x:sum","type":"recording","health":"ok"}]}]}}`)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

const rulesYAML = `groups:
  - name: g
    rules:
      - record: job:x:sum
        expr: sum by (job) (x)
`

// promcheck check is the e2e test's proof that "every panel query" works:
// a dashboard in which it finds no query to run (not the classic model, an
// export wrapped by Grafana's API, a v2 dashboard, a target whose query is
// not in expr) must fail the check, not pass it with 0 queries run.
func TestCheckFindsNothingToCheck(t *testing.T) {
	real, err := os.ReadFile("../../../docs/grafana/floodgate.json")
	if err != nil {
		t.Fatal(err)
	}
	wrapped, _ := json.Marshal(map[string]any{"dashboard": json.RawMessage(real), "meta": map[string]any{"slug": "floodgate"}})
	for _, tc := range []struct {
		name      string
		dashboard string
		wantErr   bool
	}{
		{"the committed dashboard", string(real), false},
		{"empty object", `{}`, true},
		{"no panels", `{"title": "floodgate", "panels": []}`, true},
		{"Grafana API export wrapper", string(wrapped), true},
		{"v2 schema", `{"apiVersion": "dashboard.grafana.app/v2beta1", "kind": "Dashboard", "spec": {"elements": {"p": {"kind": "Panel"}}}}`, true},
		{"target without expr", `{"panels": [{"title": "In-flight", "targets": [{"refId": "A", "query": "floodgate_limit"}]}]}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakePrometheus(t)
			dir := t.TempDir()
			dash, rules := filepath.Join(dir, "dashboard.json"), filepath.Join(dir, "rules.yml")
			if err := os.WriteFile(dash, []byte(tc.dashboard), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(rules, []byte(rulesYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			err := checkCmd([]string{"-url", srv.URL, "-dashboard", dash, "-rules", rules})
			if (err != nil) != tc.wantErr {
				t.Errorf("checkCmd error = %v, want an error: %v", err, tc.wantErr)
			}
		})
	}
}
