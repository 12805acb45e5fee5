package workloadcontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// A ConfigMap of a node's config name that someone else made (without the operator's labels,
// so the cache does not show it) is never taken over: the node says so, no workload is
// created, and once it is gone the node's own objects are made.
var _ = Describe("Same-named objects of someone else", func() {
	It("leaves a ConfigMap of the node's name alone, creates no workload, and reports it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		theirs := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.ConfigMapName("c-0-0")},
			Data:       map[string]string{"app.properties": "theirs"},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		n := createNode(ctx, ns, nil)

		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/" + valkeyv1.ReasonObjectNotOwned))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("ConfigMap " + theirs.Name + " exists and is not owned by ValkeyNode c-0-0"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/" + valkeyv1.EventObjectNotOwned)))
		var cur corev1.ConfigMap
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
		Expect(cur.Data).To(Equal(theirs.Data))
		Expect(cur.OwnerReferences).To(BeEmpty())
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.WorkloadName("c-0-0")}, &appsv1.StatefulSet{})).
			To(MatchError(ContainSubstring("not found")), "no workload while the ConfigMap is someone else's")

		By("theirs deleted: the node's own ConfigMap and StatefulSet are made at its next look, within 30 s")
		Expect(k8s.Delete(ctx, &cur)).To(Succeed())
		Eventually(statefulSet(ctx, n), 45*time.Second).ShouldNot(BeNil())
		Eventually(configMap(ctx, n)).ShouldNot(BeEmpty())
	})

	It("leaves a StatefulSet of the node's name alone and reports it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		labels := map[string]string{"app": "theirs"}
		theirs := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valkeyv1.WorkloadName("c-0-0")},
			Spec: appsv1.StatefulSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
				},
			},
		}
		Expect(k8s.Create(ctx, theirs)).To(Succeed())
		n := createNode(ctx, ns, nil)

		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/" + valkeyv1.ReasonObjectNotOwned))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("StatefulSet " + theirs.Name + " exists and is not owned"))
		var cur appsv1.StatefulSet
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(theirs), &cur)).To(Succeed())
		Expect(cur.Spec.Template.Spec.Containers).To(HaveLen(1))
		Expect(cur.Spec.Template.Spec.Containers[0].Image).To(Equal("nginx"))
		Expect(cur.OwnerReferences).To(BeEmpty())
	})
})
