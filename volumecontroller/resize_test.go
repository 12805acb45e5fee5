package volumecontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/volumecontroller"
)

var _ = Describe("online expansion", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	// boundNode creates a node with a claim of 1Gi bound in the given class.
	boundNode := func(ctx context.Context, class *storagev1.StorageClass) (*valkeyv1.ValkeyNode, *corev1.PersistentVolumeClaim) {
		node := newNode(ns, "1Gi", &class.Name, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		pvc := waitClaim(ctx, node)
		bind(ctx, pvc, "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		return node, pvc
	}
	setSize := func(ctx context.Context, node *valkeyv1.ValkeyNode, size string) {
		Eventually(func() error {
			cur := getNode(ctx, node)
			cur.Spec.Persistence.Size = resource.MustParse(size)
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
	}
	requested := func(ctx context.Context, node *valkeyv1.ValkeyNode) func() string {
		return func() string { return claimOf(ctx, node)().Spec.Resources.Requests.Storage().String() }
	}

	It("patches the claim's request in place and follows the claim's resize signals", func(ctx context.Context) {
		class := newClass(ctx, "expandable-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node, pvc := boundNode(ctx, class)
		started, finished, failed := counter("resizes_started_total"), counter("resizes_finished_total"), counter("resizes_failed_total")

		setSize(ctx, node, "2Gi")
		Eventually(requested(ctx, node)).Should(Equal("2Gi"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/Resizing"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("True/Bound"))
		Expect(getNode(ctx, node).Status.Volume.Requested).To(Equal("2Gi"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/ResizeStarted"))
		Expect(counter("resizes_started_total")).To(Equal(started + 1))

		By("the resizer reports a controller error")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Conditions = []corev1.PersistentVolumeClaimCondition{{
				Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, Message: "quota exceeded"}}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/ResizeFailed"))
		Expect(getNode(ctx, node).Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("quota exceeded"))))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("True/Bound"))
		Eventually(func() float64 { return counter("resizes_failed_total") }).Should(Equal(failed + 1))

		By("the volume grew, the file system waits for the node")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Conditions = []corev1.PersistentVolumeClaimCondition{{
				Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue}}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/FileSystemResizePending"))

		By("the node reports an infeasible resize in allocatedResourceStatuses")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Conditions = nil
			s.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{
				corev1.ResourceStorage: corev1.PersistentVolumeClaimNodeResizeInfeasible}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/ResizeFailed"))

		By("the resize completes")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.AllocatedResourceStatuses = nil
			s.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		Expect(getNode(ctx, node).Status.Volume.Capacity).To(Equal("2Gi"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/ResizeFinished"))
		Expect(counter("resizes_finished_total")).To(Equal(finished + 1))
	})

	It("refuses to expand when the StorageClass does not allow it, and recovers when it does", func(ctx context.Context) {
		class := newClass(ctx, "fixed-"+ns, false, storagev1.VolumeBindingImmediate, nil)
		node, _ := boundNode(ctx, class)

		setSize(ctx, node, "2Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/ExpansionNotSupported"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("True/Bound"))
		Consistently(requested(ctx, node)).Should(Equal("1Gi"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/ExpansionNotSupported"))

		By("the administrator allows expansion on the class")
		Eventually(func() error {
			sc := &storagev1.StorageClass{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(class), sc); err != nil {
				return err
			}
			t := true
			sc.AllowVolumeExpansion = &t
			return k8s.Update(ctx, sc)
		}).Should(Succeed())
		// The API server's admission reads the class from its own cache: when it has not
		// seen the change yet, it refuses the first patch, and the retry gets through.
		Eventually(requested(ctx, node)).WithTimeout(3 * volumecontroller.RetryRefusedExpansion).Should(Equal("2Gi"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/Resizing"))
	})

	It("reports an expansion the API server refuses (a storage quota) as ResizeFailed", func(ctx context.Context) {
		class := newClass(ctx, "expandable-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node, _ := boundNode(ctx, class)
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "storage", Namespace: ns},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
				corev1.ResourceRequestsStorage: resource.MustParse("1536Mi")}},
		}
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		// Play the quota controller: the claim already uses 1Gi.
		quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{
			corev1.ResourceRequestsStorage: resource.MustParse("1Gi")}}
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())

		setSize(ctx, node, "2Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/ResizeFailed"))
		Expect(getNode(ctx, node).Status.Conditions).To(ContainElement(HaveField("Message", ContainSubstring("quota"))))
		Expect(requested(ctx, node)()).To(Equal("1Gi"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeReady)()).To(Equal("True/Bound"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/ResizeFailed"))

		By("the administrator raises the quota: the expansion is tried again and admitted")
		Eventually(func() error {
			cur := &corev1.ResourceQuota{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(quota), cur); err != nil {
				return err
			}
			cur.Spec.Hard = corev1.ResourceList{corev1.ResourceRequestsStorage: resource.MustParse("4Gi")}
			if err := k8s.Update(ctx, cur); err != nil {
				return err
			}
			cur.Status.Hard = cur.Spec.Hard
			return k8s.Status().Update(ctx, cur)
		}).Should(Succeed())
		Eventually(requested(ctx, node)).WithTimeout(3 * volumecontroller.RetryRefusedExpansion).Should(Equal("2Gi"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/Resizing"))
	})

	It("resolves the default StorageClass before expanding", func(ctx context.Context) {
		newClass(ctx, "default-"+ns, false, storagev1.VolumeBindingImmediate,
			map[string]string{"storageclass.kubernetes.io/is-default-class": "true"})
		node := newNode(ns, "1Gi", nil, "")
		Expect(k8s.Create(ctx, node)).To(Succeed())
		bind(ctx, waitClaim(ctx, node), "1Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		setSize(ctx, node, "2Gi")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/ExpansionNotSupported"))
		Consistently(requested(ctx, node)).Should(Equal("1Gi"))
	})

	It("never shrinks a claim that is larger than the spec", func(ctx context.Context) {
		class := newClass(ctx, "expandable-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node, pvc := boundNode(ctx, class)

		By("an autoscaler grows the claim to 5Gi")
		Eventually(func() error {
			cur := claimOf(ctx, node)()
			cur.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("5Gi")
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/LargerThanRequested"))

		By("the spec grows, still below the claim")
		setSize(ctx, node, "2Gi")
		Eventually(func() int64 { return getNode(ctx, node).Status.Conditions[0].ObservedGeneration }).
			Should(Equal(getNode(ctx, node).Generation))
		Consistently(requested(ctx, node)).Should(Equal("5Gi"))
		Expect(condition(ctx, node, valkeyv1.ConditionVolumeSized)()).To(Equal("True/LargerThanRequested"))
		Expect(getNode(ctx, node).Status.Volume).To(HaveField("Capacity", "5Gi"))
	})
})

// counter reads one of the controller's counters from the metrics registry.
func counter(name string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "valkey_volume_controller_"+name {
			return sum(f.GetMetric())
		}
	}
	return 0
}

func sum(ms []*dto.Metric) float64 {
	var s float64
	for _, m := range ms {
		s += m.GetCounter().GetValue()
	}
	return s
}

// claimsInState reads valkey_volume_controller_claims for a state.
func claimsInState(state string) float64 {
	families, err := metrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "valkey_volume_controller_claims" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && l.GetValue() == state {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}
