package topologycontroller_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/envtest"
)

// nodeConfigs is each node's spec.config, by name.
func nodeConfigs(ns string) func() map[string]map[string]string {
	return func() map[string]map[string]string {
		out := map[string]map[string]string{}
		for _, n := range listNodes(ns) {
			out[n.Name] = n.Spec.Config
		}
		return out
	}
}

var _ = Describe("A spec.config the workload controller refuses", func() {
	It("is held from the nodes, which stay observed and managed, and ConfigApplied says why until it is corrected", func() {
		ns := newNamespace()
		f, pw := formCluster(ns, "ic", 1, 1)
		primary, replica := valkeyv1.NodeName("ic", 0, 0), valkeyv1.NodeName("ic", 0, 1)
		maxmemory := configOf(f, pw, "maxmemory", primary, replica)
		Eventually(clusterCondition(ns, "ic", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))

		By("a CRD that predates spec.config's rules lets dir through, beside a live key")
		restore, err := envtest.WithoutConfigRules(context.Background(), k8s)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { Expect(restore(ctx)).To(Succeed()) })
		patchSpec(ns, "ic", `{"config":{"maxmemory":"64mb","dir":"/tmp"}}`)
		Eventually(clusterCondition(ns, "ic", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("False/InvalidConfig"))
		Expect(clusterConditionMessage(ns, "ic", valkeyv1.ConditionConfigApplied)).To(And(
			ContainSubstring(`config key "dir" refused`), ContainSubstring("the nodes keep the config they have")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventInvalidConfig) }, 10*time.Second, 200*time.Millisecond).Should(Equal(1))
		Consistently(nodeConfigs(ns), 3*time.Second, 200*time.Millisecond).Should(Equal(map[string]map[string]string{primary: nil, replica: nil}),
			"the refused config is not handed to the nodes")
		Expect(maxmemory()).To(Equal(both("ic", "0")), "nothing of it is set live")
		By("the cluster is still observed: its status is what the servers say")
		Expect(clusterReady(ns, "ic")()).To(Succeed())
		Expect(clusterCondition(ns, "ic", valkeyv1.ConditionDegraded)()).To(Equal("False/Healthy"))
		Expect(clusterCondition(ns, "ic", valkeyv1.ConditionSlotsAssigned)()).To(Equal("True/AllSlotsAssigned"))
		Expect(getCluster(ns, "ic").Status.ReadyNodes).To(Equal(int32(2)))

		By("nodes an older operator gave a refused config (two spellings of maxmemory): nothing of it is set live, nothing flaps")
		patchSpec(ns, "ic", `{"config":{"dir":null,"Maxmemory":"32mb","maxmemory":"48mb"}}`)
		Eventually(clusterConditionMessage, 20*time.Second, 200*time.Millisecond).WithArguments(ns, "ic", valkeyv1.ConditionConfigApplied).
			Should(ContainSubstring("same directive as"))
		for _, name := range []string{primary, replica} {
			// Patched as an older operator wrote it: again while a round that read the node
			// before the patch writes it back (the node's spec is the controller's).
			Eventually(func() string {
				if n := getNode(ns, name); n.Spec.Config["Maxmemory"] != "32mb" {
					node := &valkeyv1.ValkeyNode{}
					node.Namespace, node.Name = ns, name
					Expect(k8s.Patch(context.Background(), node, client.RawPatch(types.MergePatchType,
						[]byte(`{"spec":{"config":{"Maxmemory":"32mb","maxmemory":"48mb"}}}`)))).To(Succeed())
				}
				return nodeConfigApplied(ns, name)()
			}, 20*time.Second, 200*time.Millisecond).Should(Equal("False/InvalidConfig"))
		}
		Consistently(maxmemory, 3*time.Second, 200*time.Millisecond).Should(Equal(both("ic", "0")))
		Expect(clusterReady(ns, "ic")()).To(Succeed())

		By("corrected")
		patchSpec(ns, "ic", `{"config":{"Maxmemory":null}}`)
		Eventually(maxmemory, 20*time.Second, 200*time.Millisecond).Should(Equal(both("ic", "50331648")))
		Eventually(clusterCondition(ns, "ic", valkeyv1.ConditionConfigApplied), 20*time.Second, 200*time.Millisecond).Should(Equal("True/AppliedLive"))
		Expect(nodeConfigs(ns)()).To(Equal(map[string]map[string]string{primary: {"maxmemory": "48mb"}, replica: {"maxmemory": "48mb"}}))
	})
})
