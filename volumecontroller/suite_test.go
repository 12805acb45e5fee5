package volumecontroller_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/volumecontroller"
)

var (
	env    *envtest.Environment
	k8s    client.Client
	cancel context.CancelFunc
)

func TestVolumeController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "volume controller")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(10 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	SetDefaultConsistentlyDuration(time.Second)
	SetDefaultConsistentlyPollingInterval(50 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	// The VolumeSnapshot API, as the external-snapshotter installs it.
	_, err = ctrlenvtest.InstallCRDs(env.Config, ctrlenvtest.CRDInstallOptions{Paths: snapshotCRDs(), ErrorIfPathMissing: true})
	Expect(err).NotTo(HaveOccurred())
	// Only the controller's requests are counted: the test's own client is made without it.
	env.Config.WrapTransport = controllerWrites.wrap
	mgr, err := env.NewManager(volumecontroller.CacheOptions())
	Expect(err).NotTo(HaveOccurred())
	env.Config.WrapTransport = nil
	metricsPort = freePort()
	Expect(volumecontroller.SetupWithManager(mgr, volumecontroller.Options{UsageInterval: time.Second, ValkeyMetricsPort: metricsPort})).To(Succeed())
	k8s, err = snapshotClient(env)
	Expect(err).NotTo(HaveOccurred())

	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// snapshotCRDs are the VolumeSnapshot, VolumeSnapshotContent and VolumeSnapshotClass CRDs
// of the pinned external-snapshotter (test/crds/snapshot, checked by make
// verify-snapshot-crds), as the local cluster installs them.
func snapshotCRDs() []string {
	return []string{filepath.Join("..", "test", "crds", "snapshot")}
}

// snapshotClient is a client of the test API server that also knows the VolumeSnapshot API.
func snapshotClient(e *envtest.Environment) (client.WithWatch, error) {
	s, err := envtest.Scheme()
	if err != nil {
		return nil, err
	}
	if err := snapshotv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.NewWithWatch(e.Config, client.Options{Scheme: s})
}

// clusterUID is the UID of the (absent) ValkeyCluster the test nodes say they belong to.
const clusterUID = "2c1b6a2e-0000-4000-8000-0000000000c1"

// newNamespace creates a fresh namespace for a spec.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "vol-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// newClass creates a StorageClass named after the namespace and removes it after the spec.
func newClass(ctx context.Context, name string, expandable bool, mode storagev1.VolumeBindingMode, annotations map[string]string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name, Annotations: annotations},
		Provisioner:          "example.com/test",
		AllowVolumeExpansion: ptr.To(expandable),
		VolumeBindingMode:    ptr.To(mode),
	}
	Expect(k8s.Create(ctx, sc)).To(Succeed())
	DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(k8s.Delete(ctx, sc))).To(Succeed()) })
	return sc
}

// newNode builds a ValkeyNode "c-0-0" of cluster "c", owned by the cluster the way the
// topology controller makes it, with persistence when size is not empty.
func newNode(ns, size string, class *string, policy valkeyv1.ReclaimPolicy) *valkeyv1.ValkeyNode {
	n := &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{
			Name: "c-0-0", Namespace: ns,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: valkeyv1.GroupVersion.String(), Kind: "ValkeyCluster", Name: "c", UID: clusterUID,
			}},
		},
		Spec: valkeyv1.ValkeyNodeSpec{ClusterName: "c"},
	}
	if size != "" {
		n.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse(size), StorageClassName: class, ReclaimPolicy: policy}
	}
	return n
}

func getNode(ctx context.Context, n *valkeyv1.ValkeyNode) *valkeyv1.ValkeyNode {
	out := &valkeyv1.ValkeyNode{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), out)).To(Succeed())
	return out
}

// condition returns a node's condition as "Status/Reason" ("" when absent or the node is gone).
func condition(ctx context.Context, n *valkeyv1.ValkeyNode, condType string) func() string {
	return func() string {
		out := &valkeyv1.ValkeyNode{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(n), out); err != nil {
			return ""
		}
		c := status.Get(out.Status.Conditions, condType)
		if c == nil {
			return ""
		}
		return string(c.Status) + "/" + c.Reason
	}
}

func claimKey(n *valkeyv1.ValkeyNode) types.NamespacedName {
	return types.NamespacedName{Namespace: n.Namespace, Name: valkeyv1.ClaimName(n.Name)}
}

// claimOf returns the node's claim, nil when absent.
func claimOf(ctx context.Context, n *valkeyv1.ValkeyNode) func() *corev1.PersistentVolumeClaim {
	return func() *corev1.PersistentVolumeClaim {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, claimKey(n), pvc); err != nil {
			return nil
		}
		return pvc
	}
}

func waitClaim(ctx context.Context, n *valkeyv1.ValkeyNode) *corev1.PersistentVolumeClaim {
	Eventually(claimOf(ctx, n)).ShouldNot(BeNil())
	return claimOf(ctx, n)()
}

// bind plays the PV controller: the claim is bound to a volume of the given capacity.
func bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim, capacity string) {
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
	if pvc.Spec.VolumeName == "" {
		pvc.Spec.VolumeName = "pv-" + pvc.Namespace
		Expect(k8s.Update(ctx, pvc)).To(Succeed())
	}
	setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
		s.Phase = corev1.ClaimBound
		s.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
		s.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	})
}

// setClaimStatus changes a claim's status as the PV, expansion or kubelet would.
func setClaimStatus(ctx context.Context, pvc *corev1.PersistentVolumeClaim, change func(*corev1.PersistentVolumeClaimStatus)) {
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pvc), pvc); err != nil {
			return err
		}
		change(&pvc.Status)
		return k8s.Status().Update(ctx, pvc)
	}).Should(Succeed())
}

// setClaimFinalizer adds or removes kubernetes.io/pvc-protection, which the API server adds
// to every claim and kube-controller-manager removes once no pod uses the claim.
func setClaimFinalizer(ctx context.Context, key types.NamespacedName, inUse bool) {
	Eventually(func() error {
		pvc := &corev1.PersistentVolumeClaim{}
		if err := k8s.Get(ctx, key, pvc); err != nil {
			return err
		}
		var fins []string
		for _, f := range pvc.Finalizers {
			if f != "kubernetes.io/pvc-protection" {
				fins = append(fins, f)
			}
		}
		if inUse {
			fins = append(fins, "kubernetes.io/pvc-protection")
		}
		pvc.Finalizers = fins
		return k8s.Update(ctx, pvc)
	}).Should(Succeed())
}

// applyDrained plays the topology controller's Drained condition at the node's current
// generation plus genOffset.
func applyDrained(ctx context.Context, n *valkeyv1.ValkeyNode, ok bool, reason string, genOffset int64) {
	cur := getNode(ctx, n)
	cur.Generation += genOffset
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerTopology}
	Expect(a.ApplyNode(ctx, cur, status.TopologyShare{Conditions: []metav1.Condition{
		status.Condition(valkeyv1.ConditionDrained, ok, reason, "test plays topology"),
	}})).To(Succeed())
}

// eventReasons lists the reasons of the events about a node, "Type/Reason".
func eventReasons(ctx context.Context, n *valkeyv1.ValkeyNode) func() []string {
	return func() []string {
		var list eventsv1.EventList
		Expect(k8s.List(ctx, &list, client.InNamespace(n.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ValkeyNode" && e.Regarding.Name == n.Name {
				out = append(out, e.Type+"/"+e.Reason)
			}
		}
		return out
	}
}

// gone tells whether the node no longer exists.
func gone(ctx context.Context, n *valkeyv1.ValkeyNode) func() bool {
	return func() bool {
		return client.IgnoreNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(n), &valkeyv1.ValkeyNode{})) == nil &&
			k8s.Get(ctx, client.ObjectKeyFromObject(n), &valkeyv1.ValkeyNode{}) != nil
	}
}
