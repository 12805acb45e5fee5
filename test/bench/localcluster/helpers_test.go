// Package localcluster_test benchmarks the operator deployed on the local Kubernetes cluster
// (make run-local) against the same pods applied bare. It runs only when BENCH_KUBECONFIG
// names the cluster's kubeconfig (make bench-local sets it); being benchmarks, `go test
// ./...` and `make e2e` never run them.
package localcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
)

// sampleFile is the sample the benchmarks create (3 shards × 1 replica, persistence).
const sampleFile = "deploy/samples/valkeycluster-local.yaml"

// clusterClient is a client of the cluster named by BENCH_KUBECONFIG, once the topology
// controller's replicas hold their partitions; the benchmark is skipped when it is not set.
func clusterClient(b *testing.B) client.WithWatch {
	b.Helper()
	path := os.Getenv("BENCH_KUBECONFIG")
	if path == "" {
		b.Skip("BENCH_KUBECONFIG is not set: these benchmarks run against the local cluster with the operator deployed (make bench-local)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme, err := envtest.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	waitPartitions(context.Background(), b, c)
	return c
}

// namespace creates a namespace for the benchmark and deletes it (with what it holds) after.
func namespace(b *testing.B, c client.Client, prefix string) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-" + rand.String(5)}}
	if err := c.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}

// sample reads the sample ValkeyCluster, to be created in ns.
func sample(b *testing.B, ns string) *valkeyv1.ValkeyCluster {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(envtest.RepoRoot(), sampleFile))
	if err != nil {
		b.Fatal(err)
	}
	vc := &valkeyv1.ValkeyCluster{}
	if err := yaml.Unmarshal(raw, vc); err != nil {
		b.Fatal(err)
	}
	vc.Namespace = ns
	return vc
}

// sampleNodes is the number of pods (and claims) of the sample.
func sampleNodes(vc *valkeyv1.ValkeyCluster) int32 { return vc.Spec.Shards * (1 + vc.Spec.Replicas) }

// poll calls done every 500 ms until it reports true or an error, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s", what, timeout)
		case <-tick.C:
		}
	}
}

// clusterReady tells whether vc reports Ready for its current generation.
func clusterReady(ctx context.Context, c client.Client, vc *valkeyv1.ValkeyCluster) (bool, error) {
	cur := &valkeyv1.ValkeyCluster{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(vc), cur); err != nil {
		return false, err
	}
	return cur.Status.ObservedGeneration == cur.Generation && status.IsTrue(cur.Status.Conditions, valkeyv1.ConditionReady), nil
}

// podReady tells whether the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// operatorNamespace, topologyPartitions and topologyPod are how the operator is deployed
// (deploy/topology-controller): the partition Leases are topology-controller-p00 and on.
const (
	operatorNamespace  = "valkey-system"
	topologyPartitions = 8
)

var topologyPod = client.MatchingLabels{"app.kubernetes.io/component": "topology-controller"}

// waitPartitions waits until every partition Lease is held by a topology pod that runs
// and is Ready: a benchmark that starts right after a deployment otherwise times the
// handover of the Leases from the replicas just replaced.
func waitPartitions(ctx context.Context, b *testing.B, c client.Client) {
	b.Helper()
	err := poll(ctx, 2*time.Minute, "topology partition Leases held by running replicas", func() (bool, error) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(operatorNamespace), topologyPod); err != nil {
			return false, err
		}
		var live []string
		for i := range pods.Items {
			if podReady(&pods.Items[i]) && pods.Items[i].DeletionTimestamp.IsZero() {
				live = append(live, pods.Items[i].Name+"-")
			}
		}
		for p := range topologyPartitions {
			var l coordinationv1.Lease
			key := client.ObjectKey{Namespace: operatorNamespace, Name: fmt.Sprintf("topology-controller-p%02d", p)}
			if err := c.Get(ctx, key, &l); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			holder := ptr.Deref(l.Spec.HolderIdentity, "")
			if !slices.ContainsFunc(live, func(prefix string) bool { return strings.HasPrefix(holder, prefix) }) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		b.Fatal(err)
	}
}
