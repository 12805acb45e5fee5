package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// annotatePaused sets (value != "") or removes valkey.io/paused on an object.
func annotatePaused(obj client.Object, value string) {
	annotatePausedLike(obj, valkeyv1.AnnotationPaused, value)
}

// annotatePausedLike sets (value != "") or removes the annotation key on an object.
func annotatePausedLike(obj client.Object, key, value string) {
	patch := `{"metadata":{"annotations":{"` + key + `":null}}}`
	if value != "" {
		patch = `{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`
	}
	ExpectWithOffset(1, k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}

func nodeCondition(ns, name, condType string) func() string {
	return func() string {
		if c := status.Get(getNode(ns, name).Status.Conditions, condType); c != nil {
			return string(c.Status) + "/" + c.Reason
		}
		return ""
	}
}

var _ = Describe("Pause", func() {
	It("changes nothing of a paused cluster, says so on the cluster and its nodes, and resumes from what is there", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "pz", 1, 1)
		primary, replica := valkeyv1.NodeName("pz", 0, 0), valkeyv1.NodeName("pz", 0, 1)
		vc := getCluster(ns, "pz")

		By("the cluster paused")
		annotatePaused(vc, "maintenance by ops")
		Eventually(clusterCondition(ns, "pz", valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/ClusterPaused"))
		Expect(clusterConditionMessage(ns, "pz", valkeyv1.ConditionPaused)).To(ContainSubstring(`"maintenance by ops"`))
		Eventually(nodeCondition(ns, replica, valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/ClusterPaused"))
		Expect(nodeCondition(ns, primary, valkeyv1.ConditionPaused)()).To(Equal("True/ClusterPaused"))
		Expect(clusterCondition(ns, "pz", valkeyv1.ConditionReady)()).To(Equal("True/Ready"), "the other conditions stay as they were")
		Expect(eventsWithReason(ns, valkeyv1.EventPaused)).To(Equal(1))

		By("a spec change while paused: no node made, no server changed")
		patchSpec(ns, "pz", `{"shards":2,"config":{"maxmemory":"64mb"}}`)
		maxmemory := configOf(f, pw, "maxmemory", primary, replica)
		Consistently(func() int { return len(listNodes(ns)) }, 3*time.Second, 200*time.Millisecond).Should(Equal(2))
		Expect(maxmemory()).To(Equal(both("pz", "0")))
		Expect(getNode(ns, primary).Spec.Config).To(BeEmpty(), "the nodes' spec is not updated")

		By("the pause lifted")
		annotatePaused(getCluster(ns, "pz"), "")
		Eventually(func() int { return len(listNodes(ns)) }, 20*time.Second, 200*time.Millisecond).Should(Equal(4))
		Eventually(maxmemory, 20*time.Second, 200*time.Millisecond).Should(Equal(both("pz", "67108864")))
		// Ready stays True through the pause: it is the round after the pause that clears Paused.
		Eventually(clusterCondition(ns, "pz", valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(BeEmpty())
		Eventually(clusterReady(ns, "pz"), formTimeout).Should(Succeed())
		Eventually(nodeCondition(ns, replica, valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(BeEmpty())
		Expect(eventsWithReason(ns, valkeyv1.EventResumed)).To(Equal(1))

		By("one node paused pauses its cluster, naming it")
		annotatePaused(getNode(ns, replica), "true")
		Eventually(clusterCondition(ns, "pz", valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/NodePaused"))
		Expect(clusterConditionMessage(ns, "pz", valkeyv1.ConditionPaused)).To(ContainSubstring("on " + replica + ":"))
		annotatePaused(getNode(ns, replica), "")
		Eventually(clusterCondition(ns, "pz", valkeyv1.ConditionPaused), 20*time.Second, 200*time.Millisecond).Should(BeEmpty())
	})
})
