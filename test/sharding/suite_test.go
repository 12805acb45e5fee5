// Package sharding_test runs two topology controllers with partitioned Leases over one
// real API server, as two replicas of the topology-controller Deployment would run, and
// checks that no ValkeyCluster is ever reconciled by both at once, that both do work,
// and that the clusters of a replica that dies are handed over within a lease period.
package sharding_test

import (
	"flag"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"valkey.io/operator/test/envtest"
)

// partitions is the number of partitions the managers share; -partitions=0 turns sharding
// off, and the spec then fails (both managers reconcile every cluster).
var partitions = flag.Int("partitions", 8, "partitions shared by the two topology managers (0: sharding off)")

var (
	env *envtest.Environment
	k8s client.Client
)

func TestSharding(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "topology controller sharding")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = env.Client()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})
