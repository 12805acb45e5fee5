package workloadcontroller_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// recordFailedCreate plays the StatefulSet controller of kube-controller-manager (envtest
// has none): it records the FailedCreate Warning it writes on a StatefulSet whose pod the
// API server refused, with the controller's wording around the refusal.
func recordFailedCreate(ctx context.Context, sts *appsv1.StatefulSet, uid types.UID, refusal error) {
	now := metav1.Now()
	Expect(k8s.Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: sts.Name + ".", Namespace: sts.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: sts.Namespace, Name: sts.Name, UID: uid,
		},
		Reason: "FailedCreate", Type: corev1.EventTypeWarning, Count: 1,
		Message:        fmt.Sprintf("create Pod %s-0 in StatefulSet %s failed error: %v", sts.Name, sts.Name, refusal),
		Source:         corev1.EventSource{Component: "statefulset-controller"},
		FirstTimestamp: now, LastTimestamp: now,
	})).To(Succeed())
}

var _ = Describe("A workload that cannot create its pod", func() {
	It("reports the StatefulSet's FailedCreate reason on WorkloadReady, with a Warning event, instead of Creating", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		sts := waitStatefulSet(ctx, n)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))

		By("a quota of 0 pods (its status as the quota controller writes it): the API server refuses the StatefulSet's pod")
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
		}
		Expect(k8s.Create(ctx, quota)).To(Succeed())
		quota.Status = corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		}
		Expect(k8s.Status().Update(ctx, quota)).To(Succeed())
		var refusal error
		Eventually(func() error {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: sts.Name + "-0", Namespace: ns, Labels: sts.Spec.Template.Labels},
				Spec:       *sts.Spec.Template.Spec.DeepCopy(),
			}
			refusal = k8s.Create(ctx, pod, client.DryRunAll)
			return refusal
		}).Should(MatchError(ContainSubstring("exceeded quota: no-pods")))

		By("an event of an earlier StatefulSet of the same name (another UID) does not count")
		recordFailedCreate(ctx, sts, "0b5e7c9e-0000-4000-8000-000000000000", fmt.Errorf("an old refusal"))
		Consistently(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))

		recordFailedCreate(ctx, sts, sts.UID, refusal)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/FailedCreate"))
		msg := message(ctx, n, valkeyv1.ConditionWorkloadReady)
		Expect(msg).To(HavePrefix("StatefulSet valkey-c-0-0 cannot create its pod: create Pod valkey-c-0-0-0 in StatefulSet valkey-c-0-0 failed error: "))
		Expect(msg).To(ContainSubstring("no-pods"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/FailedCreate: StatefulSet valkey-c-0-0 cannot create its pod")))

		By("once the StatefulSet's pod exists, WorkloadReady follows the pod again")
		Expect(k8s.Delete(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods", Namespace: ns}})).To(Succeed())
		Eventually(func() error {
			return k8s.Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: sts.Name + "-0", Namespace: ns, Labels: sts.Spec.Template.Labels,
					Annotations:     sts.Spec.Template.Annotations,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
				Spec: *sts.Spec.Template.Spec.DeepCopy(),
			})
		}).Should(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodPending"))
	})

	It("reports a Deployment's ReplicaFailure condition on WorkloadReady", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Spec.WorkloadType = valkeyv1.WorkloadDeployment })
		dep := &appsv1.Deployment{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "valkey-c-0-0"}, dep)
		}).Should(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))

		By("the deployment controller reports its ReplicaSet's FailedCreate")
		dep.Status.Conditions = []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "valkey-c-0-0-5d8f9-" is forbidden: exceeded quota: no-pods`,
		}}
		Expect(k8s.Status().Update(ctx, dep)).To(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/FailedCreate"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(Equal(
			`Deployment valkey-c-0-0 cannot create its pod: FailedCreate: pods "valkey-c-0-0-5d8f9-" is forbidden: exceeded quota: no-pods`))
	})
})
