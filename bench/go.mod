module github.com/quorumlock/quorumlock/bench

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/gomodule/redigo v1.9.3
	github.com/quorumlock/quorumlock v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

// The library is always the one in this repository.
replace github.com/quorumlock/quorumlock => ../
