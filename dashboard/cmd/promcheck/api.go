package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// api is a client of Prometheus's HTTP API (/api/v1).
type api struct {
	base   string // http://host:port
	client *http.Client
}

func newAPI(base string) *api {
	return &api{base: base, client: &http.Client{Timeout: 10 * time.Second}}
}

// series is one result of a query: its labels (values are left out).
type series struct {
	Metric map[string]string `json:"metric"`
}

// response is the envelope of every /api/v1 answer.
type response struct {
	Status    string          `json:"status"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Data      json.RawMessage `json:"data"`
}

func (a *api) get(ctx context.Context, path string, params url.Values, data any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.base+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("%s: HTTP %d, not JSON: %.200s", path, resp.StatusCode, body)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

// queryRange runs expr from start to end with the given step, as a Grafana
// panel does, and returns the series of the result (a matrix).
func (a *api) queryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]series, error) {
	var data struct {
		ResultType string   `json:"resultType"`
		Result     []series `json:"result"`
	}
	err := a.get(ctx, "/api/v1/query_range", url.Values{
		"query": {expr},
		"start": {unixSeconds(start)},
		"end":   {unixSeconds(end)},
		"step":  {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	}, &data)
	return data.Result, err
}

// query runs expr at the current time and returns the series of the result,
// or none for a scalar or a string.
func (a *api) query(ctx context.Context, expr string) ([]series, error) {
	var data struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := a.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" && data.ResultType != "matrix" {
		return nil, nil
	}
	var s []series
	err := json.Unmarshal(data.Result, &s)
	return s, err
}

// loadedRule is a rule as the server loaded and last evaluated it.
type loadedRule struct {
	Group     string `json:"-"`
	Name      string `json:"name"`
	Type      string `json:"type"` // "recording" or "alerting"
	Health    string `json:"health"`
	LastError string `json:"lastError"`
}

// rules returns every rule the server has loaded, group by group; the groups
// may come in another order than the file's, the rules of a group do not.
func (a *api) rules(ctx context.Context) ([]loadedRule, error) {
	var data struct {
		Groups []struct {
			Name  string       `json:"name"`
			Rules []loadedRule `json:"rules"`
		} `json:"groups"`
	}
	if err := a.get(ctx, "/api/v1/rules", nil, &data); err != nil {
		return nil, err
	}
	var rs []loadedRule
	for _, g := range data.Groups {
		for _, r := range g.Rules {
			r.Group = g.Name
			rs = append(rs, r)
		}
	}
	return rs, nil
}

// unixSeconds formats t for the API: Unix seconds with milliseconds.
func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}
