package apiserver_test

import "testing"

// The benchmarks run in this order (go test runs them in source order): the 300-node
// fan-out, idle writes on that cluster, then the 1,002-node fan-out on a new API server with
// 10,000 unrelated objects, the memory of that run, and 1,000 small clusters on a new API
// server. Run one alone and it sets up what it measures itself.

// BenchmarkFanOut300 fans out a cluster of 100 shards × 2 replicas (300 nodes) with the three
// binaries, then creates the same objects with a bare client on 1 and on 8 goroutines, and
// prints the times, the ratios and the writes per node of each controller.
func BenchmarkFanOut300(b *testing.B) { benchFanOut(b, 100, 2, false) }

// BenchmarkIdleWrites counts each controller's API writes per minute on the settled
// 300-node cluster of BenchmarkFanOut300, then restarts the three controllers and counts
// their writes over their first minute.
func BenchmarkIdleWrites(b *testing.B) { benchIdleWrites(b) }

// BenchmarkFanOut1000 is BenchmarkFanOut300 with 334 × 2 (1,002 nodes), after 10,000
// unrelated ConfigMaps and Secrets were created (BenchmarkMemory measures that run).
func BenchmarkFanOut1000(b *testing.B) { benchFanOut(b, 334, 2, true) }

// BenchmarkMemory prints each controller's RSS (VmRSS) and Go heap (in use, allocated) with
// the 1,002-node cluster of BenchmarkFanOut1000 settled and 10,000 unrelated ConfigMaps and
// Secrets present.
func BenchmarkMemory(b *testing.B) { benchMemory(b) }

// BenchmarkScale creates 1,000 ValkeyClusters of 3 shards × 1 replica (6,000 nodes) at once
// on a new API server, with the topology controller in 3 replicas sharing its 8 partitions,
// and prints the time for all to be fanned out, then each process's memory, and its writes,
// reconciles and CPU over a minute settled (-scale-clusters, -scale-shards, -scale-replicas
// and -scale-topology-replicas change the shape).
func BenchmarkScale(b *testing.B) { benchScale(b) }
