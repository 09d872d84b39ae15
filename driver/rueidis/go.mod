module github.com/quorumlock/quorumlock/driver/rueidis

go 1.26.0

require (
	github.com/quorumlock/quorumlock v0.0.0-00010101000000-000000000000
	github.com/redis/rueidis v1.0.79
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/hashicorp/errwrap v1.0.0 // indirect
	github.com/hashicorp/go-multierror v1.1.1 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

// The library is always the one in this repository.
replace github.com/quorumlock/quorumlock => ../..
