package workloadcontroller_test

import (
	"context"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/workloadcontroller"
)

func withPersistence(n *valkeyv1.ValkeyNode) {
	n.Spec.Persistence = &valkeyv1.PersistenceSpec{Size: resource.MustParse("1Gi")}
}

func inCluster(n *valkeyv1.ValkeyNode) {
	n.Spec.ClusterName = "c"
}

// volumeOf returns the pod template's volume of the given name.
func volumeOf(sts *appsv1.StatefulSet, name string) corev1.Volume {
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	return corev1.Volume{}
}

func mountPathOf(c corev1.Container, volume string) string {
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m.MountPath
		}
	}
	return ""
}

func image(ctx context.Context, n *valkeyv1.ValkeyNode) func() string {
	return func() string {
		if sts := statefulSet(ctx, n)(); sts != nil {
			return sts.Spec.Template.Spec.Containers[0].Image
		}
		return ""
	}
}

var _ = Describe("Volume gate", func() {
	It("with persistence creates nothing until VolumeReady=True, then mounts the claim at /data", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) })
		playVolume(ctx, n, false, valkeyv1.ReasonCreating)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WaitingForVolume"))
		Expect(statefulSet(ctx, n)()).To(BeNil())
		Expect(configMap(ctx, n)()).To(BeEmpty())

		By("a VolumeReady=True for an older generation does not open the gate")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1" })
		stale := getNode(ctx, n)
		stale.Generation--
		Expect(status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}.ApplyNode(ctx, stale,
			status.VolumeShare{Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionVolumeReady, true, valkeyv1.ReasonBound, "")}}),
		).To(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WaitingForVolume"))
		Consistently(statefulSet(ctx, n)).Should(BeNil())

		By("VolumeReady=True for the current generation")
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		sts := waitStatefulSet(ctx, n)
		data := volumeOf(sts, "data")
		Expect(data.PersistentVolumeClaim).NotTo(BeNil())
		Expect(data.PersistentVolumeClaim.ClaimName).To(Equal("valkey-c-0-0-data"))
		Expect(data.EmptyDir).To(BeNil())
		Expect(mountPathOf(sts.Spec.Template.Spec.Containers[0], "data")).To(Equal("/data"))
		Expect(sts.Spec.VolumeClaimTemplates).To(BeEmpty())
		Expect(*sts.Spec.Replicas).To(Equal(int32(1)))
		Expect(sts.OwnerReferences).To(ContainElement(HaveField("UID", getNode(ctx, n).UID)))
		Expect(sts.Labels).To(HaveKeyWithValue(valkeyv1.LabelCluster, "c"))
		Expect(sts.Spec.Template.Labels).To(HaveKeyWithValue(valkeyv1.LabelNode, "c-0-0"))

		conf := configMap(ctx, n)()
		Expect(conf).To(ContainSubstring("\ndir \"/data\"\n"))
		Expect(conf).To(ContainSubstring("\ncluster-config-file \"/data/nodes.conf\"\n"))
		Expect(conf).To(ContainSubstring("\nsave \"3600 1 300 100 60 10000\"\n"))
		Expect(conf).To(ContainSubstring("\nshutdown-on-sigterm \"save\"\n"))
		Expect(conf).To(ContainSubstring("\nappendonly \"no\"\n"))

		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))
		Expect(condition(ctx, n, valkeyv1.ConditionRollPending)()).To(Equal("False/UpToDate"))
		ws := workloadStatus(ctx, n)()
		Expect(ws.Kind).To(Equal("StatefulSet"))
		Expect(ws.Name).To(Equal("valkey-c-0-0"))
		Expect(ws.DesiredTemplateHash).To(Equal(sts.Spec.Template.Annotations[workloadcontroller.AnnotationTemplateHash]))
	})

	It("without persistence creates the StatefulSet at once with an emptyDir, no RDB and no AOF", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			inCluster(n)
			n.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "c-auth"} // never created: never read
		})
		sts := waitStatefulSet(ctx, n)
		Expect(volumeOf(sts, "data").EmptyDir).NotTo(BeNil())
		Expect(volumeOf(sts, "data").PersistentVolumeClaim).To(BeNil())
		Expect(volumeOf(sts, "config").ConfigMap.Name).To(Equal("valkey-c-0-0-config"))

		pod := sts.Spec.Template.Spec
		c := pod.Containers[0]
		Expect(c.Command).To(HaveExactElements("/opt/valkey-operator/valkey-start", "run", "--data-dir", "/data",
			"--addr", "127.0.0.1:6379", "--metrics-addr", ":9121", "--auth-file", "/run/valkey-auth/auth.conf",
			"--user", "valkey-operator", "--password-env", "VALKEY_OPERATOR_PASSWORD", "--acl-file", "/etc/valkey-acl/users.acl",
			"--", "valkey-server", "/etc/valkey/valkey.conf"), "no --durable without persistence")
		Expect(pod.InitContainers).To(HaveLen(1))
		Expect(pod.InitContainers[0].Image).To(Equal("valkey.local/workload-controller:dev"))
		Expect(strings.Join(c.Args, " ")).To(ContainSubstring("--cluster-announce-ip $(POD_IP)"))
		for _, name := range []string{"VALKEY_OPERATOR_PASSWORD", "REDISCLI_AUTH", "VALKEYCLI_AUTH"} {
			Expect(c.Env).To(ContainElement(And(HaveField("Name", name),
				HaveField("ValueFrom.SecretKeyRef.Name", "c-operator"), HaveField("ValueFrom.SecretKeyRef.Key", "password"))))
		}
		Expect(c.Env).NotTo(ContainElement(HaveField("Name", "VALKEY_PASSWORD")), "a cluster node has no requirepass")
		Expect(volumeOf(sts, "acl").Secret.SecretName).To(Equal("c-acl"))
		Expect(mountPathOf(c, "acl")).To(Equal("/etc/valkey-acl"))
		Expect(c.Env).To(ContainElement(And(HaveField("Name", "POD_IP"), HaveField("ValueFrom.FieldRef.FieldPath", "status.podIP"))))
		Expect(c.Ports).To(ConsistOf(HaveField("ContainerPort", int32(6379)), HaveField("ContainerPort", int32(16379)), HaveField("ContainerPort", int32(9121))))
		Expect(c.ReadinessProbe.HTTPGet).To(HaveField("Path", "/readyz"))
		Expect(c.LivenessProbe).NotTo(BeNil())
		Expect(c.StartupProbe).NotTo(BeNil())
		Expect(*c.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
		Expect(*c.SecurityContext.AllowPrivilegeEscalation).To(BeFalse())
		Expect(*pod.SecurityContext.RunAsNonRoot).To(BeTrue())
		Expect(*pod.SecurityContext.FSGroup).To(Equal(int64(1000)))
		Expect(*pod.TerminationGracePeriodSeconds).To(Equal(int64(60)))
		Expect(mountPathOf(c, "config")).To(Equal("/etc/valkey"))

		conf := configMap(ctx, n)()
		Expect(conf).To(ContainSubstring("\nsave \"\"\n"))
		Expect(conf).To(ContainSubstring("\nappendonly \"no\"\n"))
		Expect(conf).To(ContainSubstring("\ndir \"/data\"\n"))
		Expect(conf).NotTo(ContainSubstring("3600"))
		Expect(conf).NotTo(ContainSubstring("appendfsync"))
		Expect(status.Get(getNode(ctx, n).Status.Conditions, valkeyv1.ConditionVolumeReady)).To(BeNil())
	})
})

var _ = Describe("User config", func() {
	// What admission refuses now, an older CRD let through: these specs take spec.config's
	// rules out of the CRDs while they run.
	BeforeEach(func(ctx context.Context) {
		restore, err := envtest.WithoutConfigRules(ctx, k8s)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx context.Context) { Expect(restore(ctx)).To(Succeed()) })
	})

	It("refuses an owned key with InvalidConfig and an event, and creates nothing", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Config = map[string]string{"maxmemory": "1gb", "DIR": "/tmp"}
		})
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/InvalidConfig"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring(`"DIR"`))
		Expect(condition(ctx, n, valkeyv1.ConditionRollPending)()).To(Equal("False/InvalidConfig"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(And(HavePrefix("Warning/InvalidConfig"), ContainSubstring(`"DIR"`))))
		Expect(statefulSet(ctx, n)()).To(BeNil())
		Expect(configMap(ctx, n)()).To(BeEmpty())

		By("once the key is removed the node starts, with the user's keys merged")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { delete(n.Spec.Config, "DIR") })
		waitStatefulSet(ctx, n)
		Expect(configMap(ctx, n)()).To(ContainSubstring("\nmaxmemory \"1gb\"\n"))
	})

	It("reports a workload the API server refuses (a request above its limit) as WorkloadRefused naming the field, and creates it once corrected", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		})
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WorkloadRefused"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("resources.requests"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/WorkloadRefused")))
		Expect(statefulSet(ctx, n)()).To(BeNil())

		By("once the request fits its limit the StatefulSet is made")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Resources.Limits[corev1.ResourceMemory] = resource.MustParse("2Gi")
		})
		waitStatefulSet(ctx, n)
	})

	It("refuses a newline injection on a running node, says why on RollPending, and leaves its workload and pod serving as they were", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		pod := runningReady(ctx, n, "10.0.0.7")
		before := statefulSet(ctx, n)()
		confBefore := configMap(ctx, n)()

		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Image = "valkey/valkey:9.0"
			n.Spec.Config = map[string]string{"maxmemory": "1mb\ndir /tmp"}
		})
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/InvalidConfig"))
		By("its pod still serves with the config it has: WorkloadReady stays True, so the topology controller goes on talking to it")
		Consistently(condition(ctx, n, valkeyv1.ConditionWorkloadReady), "2s").Should(Equal("True/Ready"))
		Expect(status.Get(getNode(ctx, n).Status.Conditions, valkeyv1.ConditionWorkloadReady).ObservedGeneration).To(Equal(getNode(ctx, n).Generation))
		By("RollPending and a Warning event say why")
		Expect(message(ctx, n, valkeyv1.ConditionRollPending)).To(And(ContainSubstring(`"maxmemory"`), ContainSubstring("U+000A"),
			ContainSubstring("the running workload is left unchanged")))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(And(HavePrefix("Warning/InvalidConfig"), ContainSubstring(`"maxmemory"`))))

		after := statefulSet(ctx, n)()
		Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
		Expect(after.Spec.Template.Spec.Containers[0].Image).To(Equal("valkey/valkey:8.0"))
		Expect(configMap(ctx, n)()).To(Equal(confBefore))
		Expect(configMap(ctx, n)()).NotTo(ContainSubstring("/tmp"))
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})).To(Succeed())
		Expect(workloadStatus(ctx, n)().PodIP).To(Equal("10.0.0.7"))

		By("once corrected, the change is applied as any other")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"maxmemory": "1mb"} })
		Eventually(func() string { return statefulSet(ctx, n)().Spec.Template.Spec.Containers[0].Image }).Should(Equal("valkey/valkey:9.0"))
		Expect(configMap(ctx, n)()).To(ContainSubstring(`maxmemory "1mb"`))
	})

	It("reports a workload the API server refuses on a running node on RollPending, and its pod as it serves", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		runningReady(ctx, n, "10.0.0.9")
		before := statefulSet(ctx, n)()
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Spec.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
			}
		})
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/WorkloadRefused"))
		Consistently(condition(ctx, n, valkeyv1.ConditionWorkloadReady), "2s").Should(Equal("True/Ready"))
		Expect(message(ctx, n, valkeyv1.ConditionRollPending)).To(ContainSubstring("resources.requests"))
		Expect(statefulSet(ctx, n)().ResourceVersion).To(Equal(before.ResourceVersion))
	})
})

var _ = Describe("WorkloadReady", func() {
	It("follows the pod's status as the kubelet reports it", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		waitStatefulSet(ctx, n)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))

		pod := startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodPending, false, "", corev1.ContainerStatus{Name: "valkey",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "pull failed"}}})
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodPending"))
		Eventually(func() string { return message(ctx, n, valkeyv1.ConditionWorkloadReady) }).Should(ContainSubstring("ImagePullBackOff"))
		Expect(workloadStatus(ctx, n)().PodName).To(Equal("valkey-c-0-0-0"))

		kubelet(ctx, pod, corev1.PodRunning, false, "10.0.0.8")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodNotReady"))
		Expect(workloadStatus(ctx, n)().PodIP).To(Equal("10.0.0.8"))

		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.0.8")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
		ws := workloadStatus(ctx, n)()
		Expect(ws.PodName).To(Equal("valkey-c-0-0-0"))
		Expect(ws.PodIP).To(Equal("10.0.0.8"))
		Expect(ws.TemplateHash).NotTo(BeEmpty())
		Expect(ws.TemplateHash).To(Equal(ws.DesiredTemplateHash))

		kubelet(ctx, pod, corev1.PodRunning, false, "10.0.0.8", corev1.ContainerStatus{Name: "valkey", RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}})
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodNotReady"))
		Expect(message(ctx, n, valkeyv1.ConditionWorkloadReady)).To(ContainSubstring("CrashLoopBackOff"))

		By("the pod is deleted (evicted); the StatefulSet makes a new one with a new IP")
		deletePod(ctx, pod)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Creating"))
		Eventually(func() string { return workloadStatus(ctx, n)().PodName }).Should(BeEmpty())
		pod = startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.0.9")
		Eventually(func() string { return workloadStatus(ctx, n)().PodIP }).Should(Equal("10.0.0.9"))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"))
		Expect(condition(ctx, n, valkeyv1.ConditionRollPending)()).To(Equal("False/UpToDate"))
	})

	It("runs a Deployment when workloadType says so", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { n.Spec.WorkloadType = valkeyv1.WorkloadDeployment })
		dep := &appsv1.Deployment{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "valkey-c-0-0"}, dep)
		}).Should(Succeed())
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		Expect(*dep.Spec.Replicas).To(Equal(int32(1)))
		Expect(statefulSet(ctx, n)()).To(BeNil())

		pod := startDeploymentPod(ctx, dep, "abcde")
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.1.1")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
		ws := workloadStatus(ctx, n)()
		Expect(ws.Kind).To(Equal("Deployment"))
		Expect(ws.PodName).To(Equal(pod.Name))
		Expect(ws.PodIP).To(Equal("10.0.1.1"))
	})
})

var _ = Describe("Rolls", func() {
	It("a changed image waits for RollApproved at the current generation, then rolls, and clears once the new pod is Ready", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		oldPod := runningReady(ctx, n, "10.0.2.1")
		oldHash := workloadStatus(ctx, n)().TemplateHash

		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1" })
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Normal/RollRequested")))
		ws := workloadStatus(ctx, n)()
		Expect(ws.TemplateHash).To(Equal(oldHash))
		Expect(ws.DesiredTemplateHash).NotTo(Equal(oldHash))
		Expect(image(ctx, n)()).To(Equal("valkey/valkey:8.0"))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"), "the old pod still serves")

		By("an approval for an older generation is not one")
		playTopology(ctx, n, 1, approved())
		Consistently(image(ctx, n)).Should(Equal("valkey/valkey:8.0"))
		Expect(condition(ctx, n, valkeyv1.ConditionRollPending)()).To(Equal("True/TemplateChanged"))

		By("the topology controller approves for the current generation")
		playTopology(ctx, n, 0, approved())
		Eventually(image(ctx, n)).Should(Equal("valkey/valkey:8.1"))
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/Rolling"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Normal/RollApplied")))
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Rolling"))

		By("the StatefulSet replaces the pod; the new one starts")
		deletePod(ctx, oldPod)
		newPod := startStatefulSetPod(ctx, n)
		kubelet(ctx, newPod, corev1.PodRunning, false, "10.0.2.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/PodNotReady"))
		Expect(condition(ctx, n, valkeyv1.ConditionRollPending)()).To(Equal("True/Rolling"))

		kubelet(ctx, newPod, corev1.PodRunning, true, "10.0.2.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"))
		ws = workloadStatus(ctx, n)()
		Expect(ws.TemplateHash).To(Equal(ws.DesiredTemplateHash))
		Expect(ws.PodIP).To(Equal("10.0.2.2"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Normal/RollCompleted")))
	})

	It("a node outside any cluster rolls at once", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		oldPod := runningReady(ctx, n, "10.0.3.1")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Config = map[string]string{"maxmemory": "2gb"} })
		Eventually(configMap(ctx, n)).Should(ContainSubstring("maxmemory \"2gb\""))
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/Rolling"))
		deletePod(ctx, oldPod)
		pod := startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.3.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
	})

	It("a workloadType change replaces the StatefulSet with a Deployment, as a roll", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		oldPod := runningReady(ctx, n, "10.0.3.5")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.WorkloadType = valkeyv1.WorkloadDeployment })
		dep := &appsv1.Deployment{}
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "valkey-c-0-0"}, dep)
		}).Should(Succeed())
		Eventually(statefulSet(ctx, n)).Should(BeNil())
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/Rolling"))
		deletePod(ctx, oldPod) // garbage collection of the StatefulSet's pod
		pod := startDeploymentPod(ctx, dep, "xyz12")
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.3.6")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"))
		Expect(workloadStatus(ctx, n)().Kind).To(Equal("Deployment"))
	})

	It("a volume size increase does not roll", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) { inCluster(n); withPersistence(n) })
		playVolume(ctx, n, false, valkeyv1.ReasonCreating)
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/WaitingForVolume"))
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		runningReady(ctx, n, "10.0.4.1")
		before := statefulSet(ctx, n)()

		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Persistence.Size = resource.MustParse("5Gi") })
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		Expect(statefulSet(ctx, n)().ResourceVersion).To(Equal(before.ResourceVersion))
		ws := workloadStatus(ctx, n)()
		Expect(ws.DesiredTemplateHash).To(Equal(ws.TemplateHash))
	})

	It("enabling persistence on a running node waits for the volume, then rolls by handshake onto the claim", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, inCluster)
		oldPod := runningReady(ctx, n, "10.0.5.1")

		updateNode(ctx, n, withPersistence)
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/WaitingForVolume"))
		Expect(volumeOf(statefulSet(ctx, n)(), "data").EmptyDir).NotTo(BeNil())

		playVolume(ctx, n, true, valkeyv1.ReasonWaitingForFirstConsumer)
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("True/TemplateChanged"))
		Expect(volumeOf(statefulSet(ctx, n)(), "data").EmptyDir).NotTo(BeNil())

		playTopology(ctx, n, 0, approved())
		Eventually(func() string {
			if pvc := volumeOf(statefulSet(ctx, n)(), "data").PersistentVolumeClaim; pvc != nil {
				return pvc.ClaimName
			}
			return ""
		}).Should(Equal("valkey-c-0-0-data"))
		Expect(configMap(ctx, n)()).To(ContainSubstring("save \"3600 1 300 100 60 10000\""))
		deletePod(ctx, oldPod)
		pod := startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.5.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
	})
})

var _ = Describe("Server-side apply", func() {
	It("writes the workload and ConfigMap as its own field manager, keeps what others add and repairs one replica", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		sts := waitStatefulSet(ctx, n)
		managers := func(obj client.Object) []string {
			var out []string
			for _, m := range obj.GetManagedFields() {
				out = append(out, m.Manager+"/"+string(m.Operation))
			}
			return out
		}
		Expect(managers(sts)).To(ContainElement(valkeyv1.FieldManagerWorkload + "/Apply"))
		cm := &corev1.ConfigMap{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: valkeyv1.ConfigMapName(n.Name)}, cm)).To(Succeed())
		Expect(managers(cm)).To(ConsistOf(valkeyv1.FieldManagerWorkload + "/Apply"))

		By("someone scales the StatefulSet and annotates it")
		Eventually(func() error {
			sts := statefulSet(ctx, n)()
			sts.Spec.Replicas = ptr.To[int32](3)
			sts.Annotations["example.com/note"] = "kept"
			return k8s.Update(ctx, sts)
		}).Should(Succeed())
		Eventually(func() int32 { return *statefulSet(ctx, n)().Spec.Replicas }).Should(Equal(int32(1)))
		Expect(statefulSet(ctx, n)().Annotations).To(HaveKeyWithValue("example.com/note", "kept"))
	})

	It("removes the roll-from annotation once the roll is done", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, nil)
		oldPod := runningReady(ctx, n, "10.0.7.1")
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Spec.Image = "valkey/valkey:8.1" })
		Eventually(func() map[string]string { return statefulSet(ctx, n)().Annotations }).
			Should(HaveKey(workloadcontroller.AnnotationRollFrom))
		deletePod(ctx, oldPod)
		pod := startStatefulSetPod(ctx, n)
		kubelet(ctx, pod, corev1.PodRunning, true, "10.0.7.2")
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/UpToDate"))
		Eventually(func() map[string]string { return statefulSet(ctx, n)().Annotations }).
			ShouldNot(HaveKey(workloadcontroller.AnnotationRollFrom))
	})
})

var _ = Describe("Node deletion", func() {
	It("keeps the pod serving until Drained=True, then deletes the workload", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			inCluster(n)
			withPersistence(n)
			n.Finalizers = []string{valkeyv1.PVCProtectionFinalizer} // the volume controller's
		})
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		pod := runningReady(ctx, n, "10.0.6.1")

		Expect(k8s.Delete(ctx, getNode(ctx, n))).To(Succeed())
		Eventually(condition(ctx, n, valkeyv1.ConditionRollPending)).Should(Equal("False/Terminating"))
		Expect(condition(ctx, n, valkeyv1.ConditionWorkloadReady)()).To(Equal("True/Ready"), "it serves while slots move away")
		playTopology(ctx, n, 0, status.Condition(valkeyv1.ConditionDrained, false, valkeyv1.ReasonMigratingSlots, ""))
		Consistently(statefulSet(ctx, n)).ShouldNot(BeNil())

		playTopology(ctx, n, 0, status.Condition(valkeyv1.ConditionDrained, true, valkeyv1.ReasonNoSlots, ""))
		Eventually(statefulSet(ctx, n)).Should(BeNil())
		Eventually(configMap(ctx, n)).Should(BeEmpty())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Terminating"))
		Expect(workloadStatus(ctx, n)().PodName).To(Equal(pod.Name))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Normal/WorkloadDeleted")))

		By("the pod goes (garbage collection)")
		deletePod(ctx, pod)
		Eventually(func() string { return workloadStatus(ctx, n)().PodName }).Should(BeEmpty())

		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Finalizers = nil })
	})

	It("with valkey.io/skip-drain deletes the workload at once, with a Warning event", func(ctx context.Context) {
		ns := newNamespace(ctx)
		n := createNode(ctx, ns, func(n *valkeyv1.ValkeyNode) {
			inCluster(n)
			withPersistence(n)
			n.Finalizers = []string{valkeyv1.PVCProtectionFinalizer}
		})
		playVolume(ctx, n, true, valkeyv1.ReasonBound)
		waitStatefulSet(ctx, n)
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) {
			n.Annotations = map[string]string{valkeyv1.AnnotationSkipDrain: "yes"}
		})
		Expect(k8s.Delete(ctx, getNode(ctx, n))).To(Succeed())
		Eventually(statefulSet(ctx, n)).Should(BeNil())
		Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("False/Terminating"))
		Eventually(eventReasons(ctx, n)).Should(ContainElement(HavePrefix("Warning/DrainSkipped")))
		updateNode(ctx, n, func(n *valkeyv1.ValkeyNode) { n.Finalizers = nil })
	})
})
