module github.com/quorumlock/quorumlock/chaos

go 1.26.8

replace github.com/quorumlock/quorumlock => ../

require (
	github.com/gomodule/redigo v1.9.3
	github.com/quorumlock/quorumlock v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
