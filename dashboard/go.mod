module github.com/floodgate-go/floodgate/dashboard

go 1.26

require (
	github.com/grafana/grafana-foundation-sdk/go v0.0.22
	gopkg.in/yaml.v3 v3.0.1
)
