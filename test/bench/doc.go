// Package bench holds the helpers of the operator's benchmarks (`make bench`): the three
// controller binaries run as processes against an API server, their client metrics and
// memory, a bare client that creates the objects the operator makes, and the checks that
// tell when a fan-out is complete. The benchmarks themselves are in test/bench/apiserver
// (envtest) and test/bench/localcluster (the local Kubernetes cluster).
package bench
