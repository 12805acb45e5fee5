package rbac_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/partition"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/topologycontroller"
	"valkey.io/operator/volumecontroller"
	"valkey.io/operator/workloadcontroller"
)

// runAs starts a controller as its binary does with --watch-namespace=ns and leader election
// in ns, but as the ServiceAccount sa of ns (impersonated): only the rights the install
// granted. It stops when the spec ends.
func runAs(ns, sa, name string, byObject map[client.Object]cache.ByObject, setup func(ctrl.Manager) error) {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + sa,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	s, err := envtest.Scheme()
	Expect(err).NotTo(HaveOccurred())
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        s,
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              name + ".valkey.io",
		LeaderElectionNamespace:       ns,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 ptr.To(15 * time.Second),
		RenewDeadline:                 ptr.To(10 * time.Second),
		RetryPeriod:                   ptr.To(200 * time.Millisecond),
		Cache:                         cache.Options{ByObject: byObject, DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(setup(mgr)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Expect(<-done).To(Succeed(), "%s stopped with an error", name)
	})
	// A manager whose caches cannot sync (a watch it has no right to) never elects.
	Eventually(func() bool {
		select {
		case err := <-done:
			Fail("the manager stopped: " + err.Error())
		case <-mgr.Elected():
			return true
		default:
		}
		return false
	}).Should(BeTrue(), "%s holds its Lease in %s", name, ns)
}

var _ = Describe("deploy/namespaced controllers", Ordered, func() {
	const ns = "team-b"
	BeforeAll(func(ctx context.Context) { install(ctx, "namespaced", ns) })

	It("run under their Roles: the volume controller creates a claim without reading its StorageClass", func(ctx context.Context) {
		runAs(ns, volumeSA, volumecontroller.Name, volumecontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return volumecontroller.SetupWithManager(mgr, volumecontroller.Options{IgnoreStorageClasses: true})
		})
		n := &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Name: "v-0-0", Namespace: ns},
			Spec: valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Image: "valkey/valkey:8.0",
				Persistence: &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi"), StorageClassName: ptr.To("fast")}}},
		}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		claim := &corev1.PersistentVolumeClaim{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ClaimName(n.Name)}, claim)
		}).Should(Succeed())
		Expect(claim.Spec.StorageClassName).To(Equal(ptr.To("fast")))
		Eventually(func() string {
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
			for _, c := range n.Status.Conditions {
				if c.Type == valkeyv1.ConditionVolumeReady {
					return c.Message
				}
			}
			return ""
		}).Should(ContainSubstring("not checked"))
	})

	It("run under their Roles: the workload controller creates the StatefulSet and ConfigMap", func(ctx context.Context) {
		runAs(ns, workloadSA, workloadcontroller.Name, workloadcontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return workloadcontroller.SetupWithManager(mgr, workloadcontroller.Options{StartImage: "valkey.local/workload-controller:dev", IgnoreNodes: true})
		})
		n := &valkeyv1.ValkeyNode{
			ObjectMeta: metav1.ObjectMeta{Name: "w-0-0", Namespace: ns},
			Spec:       valkeyv1.ValkeyNodeSpec{ClusterName: "w", ServerSpec: valkeyv1.ServerSpec{Image: "valkey/valkey:8.0"}},
		}
		Expect(k8s.Create(ctx, n)).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "valkey-w-0-0"}, &appsv1.StatefulSet{})
		}).Should(Succeed())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ConfigMapName(n.Name)}, &corev1.ConfigMap{})).To(Succeed())
	})

	It("run under their Roles: the topology controller holds its partition Leases and generates the password Secret, the nodes, the budget and the policy, without listing Secrets", func(ctx context.Context) {
		runAs(ns, topologySA, topologycontroller.Name, topologycontroller.CacheOptions(), func(mgr ctrl.Manager) error {
			return topologycontroller.SetupWithManager(mgr, topologycontroller.Options{ResyncPeriod: time.Second,
				PartitionOptions: topologycontroller.PartitionOptions{Partitions: 2, PartitionNamespace: ns, Identity: "rbac",
					PartitionLeaseDuration: 3 * time.Second, PartitionRenewDeadline: 2 * time.Second, PartitionRetryPeriod: 200 * time.Millisecond}})
		})
		Eventually(func(g Gomega) {
			var leases coordinationv1.LeaseList
			g.Expect(k8s.List(ctx, &leases, client.InNamespace(ns), client.MatchingLabels{partition.LabelSet: topologycontroller.Name})).To(Succeed())
			var holders []string
			for _, l := range leases.Items {
				holders = append(holders, ptr.Deref(l.Spec.HolderIdentity, ""))
			}
			g.Expect(holders).To(ConsistOf("rbac", "rbac", "rbac"), "its member Lease and both partition Leases")
		}).Should(Succeed())
		vc := &valkeyv1.ValkeyCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns},
			Spec:       valkeyv1.ValkeyClusterSpec{Shards: 1, ServerSpec: valkeyv1.ServerSpec{Image: "valkey/valkey:8.0"}},
		}
		Expect(k8s.Create(ctx, vc)).To(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.PasswordSecretName("t")}, &corev1.Secret{})
		}).Should(Succeed())
		Eventually(func() (int, error) {
			var nodes valkeyv1.ValkeyNodeList
			err := k8s.List(ctx, &nodes, client.InNamespace(ns), client.MatchingLabels{valkeyv1.LabelCluster: "t"})
			return len(nodes.Items), err
		}).Should(Equal(1))
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.DisruptionBudgetName("t", 0)}, &policyv1.PodDisruptionBudget{})
		}).Should(Succeed())
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.NetworkPolicyName("t")}, &networkingv1.NetworkPolicy{})
		}).Should(Succeed())
	})
})
