package workloadcontroller_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/workloadcontroller"
)

// startImage is the valkey-start image of the StatefulSet's template.
func startImage(ctx context.Context, n *valkeyv1.ValkeyNode) func() string {
	return func() string {
		sts := statefulSet(ctx, n)()
		if sts == nil {
			return ""
		}
		for _, c := range sts.Spec.Template.Spec.InitContainers {
			if c.Name == "install-valkey-start" {
				return c.Image
			}
		}
		return ""
	}
}

// readinessProbe is the server container's readiness probe in the StatefulSet's template.
func readinessProbe(ctx context.Context, n *valkeyv1.ValkeyNode) func() *corev1.Probe {
	return func() *corev1.Probe {
		sts := statefulSet(ctx, n)()
		if sts == nil {
			return nil
		}
		return sts.Spec.Template.Spec.Containers[0].ReadinessProbe
	}
}

var _ = Describe("valkey-start's image after an operator upgrade", func() {
	It("restarts no pod when only valkey-start's image and how it is probed are new, and brings both with the next roll", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) })
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		pod := runningReady(ctx, n, "10.0.3.1")

		By("the template an earlier release applied: the same one but for valkey-start's image and its valkey-cli probes, its pod running")
		const earlierImage = "valkey.local/workload-controller:earlier"
		earlier, err := workloadcontroller.DesiredTemplate(getNode(ctx, n), workloadcontroller.Options{StartImage: earlierImage, ExecProbes: true})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() error {
			sts := &appsv1.StatefulSet{}
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.WorkloadName(n.Name)}, sts); err != nil {
				return err
			}
			sts.Spec.Template = earlier
			// As an earlier release wrote it, under the controller's name; by update, the
			// harder case: its probes' exec is then not the apply's to remove until taken over.
			return k8s.Update(ctx, sts, client.FieldOwner(valkeyv1.FieldManagerWorkload))
		}).Should(Succeed())
		deletePod(ctx, pod)
		pod = startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.3.2")
		Expect(pod.Spec.InitContainers[0].Image).To(Equal(earlierImage))

		Consistently(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		Expect(startImage(ctx, n)()).To(Equal(earlierImage))
		Expect(readinessProbe(ctx, n)().Exec).NotTo(BeNil(), "the kept valkey-start is probed as before")
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"))

		By("a change that rolls the pod brings this release's valkey-start with it")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1" })
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		playTopology(ctx, n, 0, approved())
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.1"))
		Expect(startImage(ctx, n)()).To(Equal("valkey.local/workload-controller:dev"))
		Expect(readinessProbe(ctx, n)().HTTPGet).NotTo(BeNil(), "this release's valkey-start answers the probes")
	})
})
