package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// target is one PromQL expression of a dashboard panel, under the row
// titled row ("" above the first row).
type target struct {
	row, panel, refID, expr string
}

// variable is one template variable of a dashboard, in dashboard order.
type variable struct {
	name, kind, query string // kind: "query", "datasource", ...
	multi, includeAll bool
}

// readDashboard returns the variables and every panel target with an expr,
// rows' nested panels (collapsed rows) included, in the order of the file,
// each with the title of the row it is under.
func readDashboard(path string) ([]variable, []target, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	type panel struct {
		Type    string  `json:"type"`
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Multi      bool            `json:"multi"`
				IncludeAll bool            `json:"includeAll"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	var vars []variable
	for _, v := range d.Templating.List {
		q := ""
		var s string
		var m struct {
			Query string `json:"query"`
		}
		switch {
		case json.Unmarshal(v.Query, &s) == nil:
			q = s
		case json.Unmarshal(v.Query, &m) == nil: // newer Grafana: {"query": "...", "refId": ...}
			q = m.Query
		}
		vars = append(vars, variable{name: v.Name, kind: v.Type, query: q, multi: v.Multi, includeAll: v.IncludeAll})
	}
	var ts []target
	var missing []string
	row := ""
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				row = p.Title
			}
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					missing = append(missing, fmt.Sprintf("%q %s", p.Title, t.RefID))
					continue
				}
				ts = append(ts, target{row: row, panel: p.Title, refID: t.RefID, expr: t.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	switch {
	case missing != nil:
		return nil, nil, fmt.Errorf("%s: targets without a PromQL expr: %s", path, strings.Join(missing, ", "))
	case len(ts) == 0:
		return nil, nil, fmt.Errorf("%s: no panel query found (want a classic dashboard model with panels[].targets[].expr; "+
			"an API export wraps it in {\"dashboard\": ...})", path)
	}
	return vars, ts, nil
}

// selection picks the dashboard rows and rule groups to check: those named
// in only (all if empty) and not in skip.
type selection struct{ only, skip map[string]bool }

// parseSelection reads two comma-separated lists of names.
func parseSelection(only, skip string) selection {
	set := func(list string) map[string]bool {
		m := map[string]bool{}
		for _, name := range strings.Split(list, ",") {
			if name = strings.TrimSpace(name); name != "" {
				m[name] = true
			}
		}
		return m
	}
	return selection{only: set(only), skip: set(skip)}
}

// has reports whether name is selected.
func (s selection) has(name string) bool {
	return (len(s.only) == 0 || s.only[name]) && !s.skip[name]
}

// unknown returns the names of s not in known.
func (s selection) unknown(known map[string]bool) []string {
	var bad []string
	for _, m := range []map[string]bool{s.only, s.skip} {
		for name := range m {
			if !known[name] {
				bad = append(bad, name)
			}
		}
	}
	sort.Strings(bad)
	return bad
}

// rule is one rule of a Prometheus rules file.
type rule struct {
	group, record, alert, expr string
}

// name is the recorded series' or the alert's name.
func (r rule) name() string {
	if r.alert != "" {
		return r.alert
	}
	return r.record
}

// readRules returns every rule of a Prometheus rules file, in file order.
func readRules(path string) ([]rule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rs []rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			rs = append(rs, rule{group: g.Name, record: r.Record, alert: r.Alert, expr: r.Expr})
		}
	}
	return rs, nil
}

var varRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// substitute replaces Grafana's variable references ($name, ${name},
// ${name:format}, [[name]]) by their values; a reference to a variable not
// in values is an error, as an undefined variable would make Grafana send
// the text as written.
func substitute(expr string, values map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		v, ok := values[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if missing != nil {
		return "", fmt.Errorf("undefined variable(s) %s in %q", strings.Join(missing, ", "), expr)
	}
	return out, nil
}

var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*\S)\s*,\s*)?(\w+)\s*\)\s*$`)

// labelValuesQuery turns a Grafana label_values(selector, label) variable
// query into the PromQL query whose series carry exactly those values:
// count by (label) (selector).
func labelValuesQuery(q string) (promql, label string, err error) {
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", "", fmt.Errorf("variable query %q: only label_values(selector, label) is supported", q)
	}
	sel := m[1]
	if sel == "" {
		sel = fmt.Sprintf(`{%s=~".+"}`, m[2])
	}
	return fmt.Sprintf("count by (%s) (%s)", m[2], sel), m[2], nil
}

// allValue is what Grafana substitutes for a multi-value variable set to
// several values (or All) in a Prometheus query: a regex alternation, each
// value escaped for a regex and then for a PromQL string.
func allValue(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = strings.ReplaceAll(regexp.QuoteMeta(v), `\`, `\\`)
	}
	sort.Strings(q)
	return "(" + strings.Join(q, "|") + ")"
}

// withBool adds the bool modifier to every comparison operator at the top
// level of expr (outside parentheses, brackets, braces and strings), so that
// an alert's expression returns the series it watches, 0 or 1, instead of
// only those over the threshold. Comparisons that already have bool, and
// those nested in a function or aggregation, are left as they are.
func withBool(expr string) string {
	var b strings.Builder
	depth := 0
	var quote byte
	for i := 0; i < len(expr); i++ {
		c := expr[i]
		b.WriteByte(c)
		switch {
		case quote != 0:
			if c == '\\' && i+1 < len(expr) {
				i++
				b.WriteByte(expr[i])
			} else if c == quote {
				quote = 0
			}
			continue
		case c == '"' || c == '\'' || c == '`':
			quote = c
			continue
		case c == '(' || c == '[' || c == '{':
			depth++
			continue
		case c == ')' || c == ']' || c == '}':
			depth--
			continue
		}
		if depth != 0 {
			continue
		}
		var op bool
		switch c {
		case '>', '<':
			op = true
			if i+1 < len(expr) && expr[i+1] == '=' {
				i++
				b.WriteByte('=')
			}
		case '=', '!':
			if i+1 < len(expr) && expr[i+1] == '=' {
				op = true
				i++
				b.WriteByte('=')
			}
		}
		if op && !strings.HasPrefix(strings.TrimLeft(expr[i+1:], " \t\n"), "bool") {
			b.WriteString(" bool")
		}
	}
	return b.String()
}

// oneLine collapses the whitespace of a multi-line expression for printing.
func oneLine(expr string) string { return strings.Join(strings.Fields(expr), " ") }
