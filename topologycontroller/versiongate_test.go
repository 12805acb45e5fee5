package topologycontroller_test

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeyconf"
)

var _ = Describe("The version gate", func() {
	It("holds a downgrade and a directive the target version does not know from the nodes, saying why, until it is set right", func() {
		ns := newNamespace()
		f, _ := formCluster(ns, "vg", 1, 1)
		if v, ok := valkeyconf.ParseVersion(getNode(ns, valkeyv1.NodeName("vg", 0, 0)).Status.Topology.ServerVersion); !ok || v.Major < 9 {
			Skip("the servers are not Valkey 9 or later: no downgrade to refuse")
		}
		primary := valkeyv1.NodeName("vg", 0, 0)
		image := getNode(ns, primary).Spec.Image

		By("an image of Valkey 8.1")
		patchSpec(ns, "vg", `{"image":"valkey/valkey:8.1.8","config":{"maxmemory":"64mb"}}`)
		Eventually(clusterCondition(ns, "vg", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/DowngradeRefused"))
		msg := clusterConditionMessage(ns, "vg", valkeyv1.ConditionVersionRefused)
		Expect(msg).To(ContainSubstring("spec.image valkey/valkey:8.1.8 is Valkey 8.1.8, an older major than the 9."))
		Expect(msg).To(ContainSubstring(valkeyv1.AnnotationAllowDowngrade + "=true"))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.ReasonDowngradeRefused) }, 10*time.Second).Should(Equal(1))
		Consistently(func() string { return getNode(ns, primary).Spec.Image }, 2*time.Second, 200*time.Millisecond).Should(Equal(image))
		Expect(getNode(ns, primary).Spec.Config).To(BeEmpty(), "the config is held with the image")
		_, approvals := f.stats()
		Expect(approvals).To(BeEmpty(), "nothing rolled")

		By("on an 8.1 image, with the downgrade acknowledged (the spec changed first: acknowledging the downgrade of a spec the gate passes would let it through)")
		patchSpec(ns, "vg", `{"image":"valkey/valkey:8.1.8","config":{"tls-auto-reload-interval":"60"}}`)
		annotatePausedLike(getCluster(ns, "vg"), valkeyv1.AnnotationAllowDowngrade, "true")
		Eventually(clusterCondition(ns, "vg", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/UnknownDirective"))
		Expect(clusterConditionMessage(ns, "vg", valkeyv1.ConditionVersionRefused)).To(ContainSubstring("spec.config names tls-auto-reload-interval, which Valkey 8.1.8"))
		Expect(getNode(ns, primary).Spec.Image).To(Equal(image))

		By("set right: a later version")
		patchSpec(ns, "vg", `{"image":"valkey/valkey:9.1.3","config":{"maxmemory":"64mb"}}`)
		Eventually(func() string { return getNode(ns, primary).Spec.Image }, 20*time.Second, 200*time.Millisecond).Should(Equal("valkey/valkey:9.1.3"))
		Eventually(clusterCondition(ns, "vg", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(BeEmpty())
	})

	It("holds an image that names an older major alone, or no version at all, from the nodes until the downgrade is acknowledged", func() {
		ns := newNamespace()
		f, _ := formCluster(ns, "vu", 1, 1)
		if v, ok := valkeyconf.ParseVersion(getNode(ns, valkeyv1.NodeName("vu", 0, 0)).Status.Topology.ServerVersion); !ok || v.Major < 9 {
			Skip("the servers are not Valkey 9 or later: no downgrade to refuse")
		}
		primary := valkeyv1.NodeName("vu", 0, 0)
		image := getNode(ns, primary).Spec.Image

		By("valkey/valkey:8-alpine: the major alone says it is older")
		patchSpec(ns, "vu", `{"image":"valkey/valkey:8-alpine"}`)
		Eventually(clusterCondition(ns, "vu", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/DowngradeRefused"))
		Expect(clusterConditionMessage(ns, "vu", valkeyv1.ConditionVersionRefused)).To(ContainSubstring("spec.image valkey/valkey:8-alpine is Valkey 8, an older major than the 9."))
		Consistently(func() string { return getNode(ns, primary).Spec.Image }, 2*time.Second, 200*time.Millisecond).Should(Equal(image))

		By("a digest alone: its version cannot be told, so it is held as a downgrade might be")
		digest := "valkey/valkey@sha256:" + strings.Repeat("ab", 32)
		patchSpec(ns, "vu", `{"image":"`+digest+`"}`)
		Eventually(clusterCondition(ns, "vu", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(Equal("True/VersionUnknown"))
		Expect(clusterConditionMessage(ns, "vu", valkeyv1.ConditionVersionRefused)).To(And(
			ContainSubstring("spec.image "+digest+" names no version"), ContainSubstring(valkeyv1.AnnotationAllowDowngrade+"=true")))
		Eventually(func() int { return eventsWithReason(ns, valkeyv1.EventVersionUnknown) }, 10*time.Second).Should(Equal(1))
		Consistently(func() string { return getNode(ns, primary).Spec.Image }, 2*time.Second, 200*time.Millisecond).Should(Equal(image))
		_, approvals := f.stats()
		Expect(approvals).To(BeEmpty(), "nothing rolled")

		By("acknowledged")
		annotatePausedLike(getCluster(ns, "vu"), valkeyv1.AnnotationAllowDowngrade, "true")
		Eventually(func() string { return getNode(ns, primary).Spec.Image }, 20*time.Second, 200*time.Millisecond).Should(Equal(digest))
		Eventually(clusterCondition(ns, "vu", valkeyv1.ConditionVersionRefused), 20*time.Second, 200*time.Millisecond).Should(BeEmpty())
	})
})
