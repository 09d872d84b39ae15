//go:build race

package main

// raceBuild makes the tests build the binary with the race detector too.
const raceBuild = true
