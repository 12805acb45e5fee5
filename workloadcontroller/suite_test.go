package workloadcontroller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/test/envtest"
	"valkey.io/operator/workloadcontroller"
)

var (
	env    *envtest.Environment
	k8s    client.Client
	cancel context.CancelFunc
)

func TestWorkloadController(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "workload controller")
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
	env.Config.WrapTransport = workloadApplies.wrap
	mgr, err := env.NewManager(workloadcontroller.CacheOptions())
	Expect(err).NotTo(HaveOccurred())
	Expect(workloadcontroller.SetupWithManager(mgr, workloadcontroller.Options{StartImage: "valkey.local/workload-controller:dev"})).To(Succeed())
	k8s, err = env.Client()
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

// newNamespace creates a fresh namespace for a spec.
func newNamespace(ctx context.Context) string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "wl-"}}
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// createNode creates a ValkeyNode "c-0-0" with image valkey:8.0 and lets change adjust it.
func createNode(ctx context.Context, ns string, change func(*valkeyv1.ValkeyNode)) *valkeyv1.ValkeyNode {
	n := &valkeyv1.ValkeyNode{
		ObjectMeta: metav1.ObjectMeta{Name: "c-0-0", Namespace: ns},
		Spec:       valkeyv1.ValkeyNodeSpec{ServerSpec: valkeyv1.ServerSpec{Image: "valkey/valkey:8.0"}},
	}
	if change != nil {
		change(n)
	}
	Expect(k8s.Create(ctx, n)).To(Succeed())
	return n
}

// updateNode changes a node's spec or metadata, retrying on conflicts.
func updateNode(ctx context.Context, n *valkeyv1.ValkeyNode, change func(*valkeyv1.ValkeyNode)) {
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		change(n)
		return k8s.Update(ctx, n)
	}).Should(Succeed())
}

func getNode(ctx context.Context, n *valkeyv1.ValkeyNode) *valkeyv1.ValkeyNode {
	out := &valkeyv1.ValkeyNode{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(n), out)).To(Succeed())
	return out
}

// condition returns a node's condition as "Status/Reason" ("" when absent or the node is
// gone), only once it was written for the node's current generation.
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
		if c.ObservedGeneration != out.Generation {
			return "stale"
		}
		return string(c.Status) + "/" + c.Reason
	}
}

// message returns the message of a node's condition.
func message(ctx context.Context, n *valkeyv1.ValkeyNode, condType string) string {
	c := status.Get(getNode(ctx, n).Status.Conditions, condType)
	if c == nil {
		return ""
	}
	return c.Message
}

// workloadStatus returns the node's status.workload (zero when absent).
func workloadStatus(ctx context.Context, n *valkeyv1.ValkeyNode) func() valkeyv1.WorkloadStatus {
	return func() valkeyv1.WorkloadStatus {
		if ws := getNode(ctx, n).Status.Workload; ws != nil {
			return *ws
		}
		return valkeyv1.WorkloadStatus{}
	}
}

// playVolume applies VolumeReady as the volume controller does, for the node's current
// generation.
func playVolume(ctx context.Context, n *valkeyv1.ValkeyNode, ready bool, reason string) {
	cur := getNode(ctx, n)
	Expect(status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerVolume}.ApplyNode(ctx, cur,
		status.VolumeShare{Conditions: []metav1.Condition{
			status.Condition(valkeyv1.ConditionVolumeReady, ready, reason, "played by the test"),
		}})).To(Succeed())
}

// playTopology applies the topology controller's conditions. generationLag > 0 writes them
// for an older generation (a stale approval).
func playTopology(ctx context.Context, n *valkeyv1.ValkeyNode, generationLag int64, conds ...metav1.Condition) {
	cur := getNode(ctx, n)
	stamped := cur.DeepCopy()
	stamped.Generation -= generationLag
	Expect(status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerTopology}.ApplyNode(ctx, stamped,
		status.TopologyShare{Conditions: conds})).To(Succeed())
}

func approved() metav1.Condition {
	return status.Condition(valkeyv1.ConditionRollApproved, true, valkeyv1.ReasonApproved, "played by the test")
}

// statefulSet returns the node's StatefulSet, nil when absent.
func statefulSet(ctx context.Context, n *valkeyv1.ValkeyNode) func() *appsv1.StatefulSet {
	return func() *appsv1.StatefulSet {
		sts := &appsv1.StatefulSet{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.WorkloadName(n.Name)}, sts); err != nil {
			return nil
		}
		return sts
	}
}

func waitStatefulSet(ctx context.Context, n *valkeyv1.ValkeyNode) *appsv1.StatefulSet {
	Eventually(statefulSet(ctx, n)).ShouldNot(BeNil())
	return statefulSet(ctx, n)()
}

// configMap returns the node's rendered valkey.conf, "" when the ConfigMap is absent.
func configMap(ctx context.Context, n *valkeyv1.ValkeyNode) func() string {
	return func() string {
		cm := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.ConfigMapName(n.Name)}, cm); err != nil {
			return ""
		}
		return cm.Data[workloadcontroller.ConfigFile]
	}
}

// startPod plays the StatefulSet (or ReplicaSet) controller: it creates the pod from the
// workload's current template, Pending as a new pod is.
func startPod(ctx context.Context, name string, owner client.Object, tmpl corev1.PodTemplateSpec) *corev1.Pod {
	gvk, err := k8s.GroupVersionKindFor(owner)
	Expect(err).NotTo(HaveOccurred())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: owner.GetNamespace(),
			Labels: tmpl.Labels, Annotations: tmpl.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: owner.GetName(), UID: owner.GetUID(),
				Controller: ptr.To(true),
			}},
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
	Expect(k8s.Create(ctx, pod)).To(Succeed())
	return pod
}

// startStatefulSetPod creates pod <sts>-0 from the StatefulSet's current template.
func startStatefulSetPod(ctx context.Context, n *valkeyv1.ValkeyNode) *corev1.Pod {
	sts := waitStatefulSet(ctx, n)
	return startPod(ctx, sts.Name+"-0", sts, sts.Spec.Template)
}

// startDeploymentPod plays the Deployment controller and its ReplicaSet's: it makes (or
// reads) the ReplicaSet of the Deployment's current template, controlled by the Deployment,
// and creates its pod <ReplicaSet>-<suffix> from that template.
func startDeploymentPod(ctx context.Context, dep *appsv1.Deployment, suffix string) *corev1.Pod {
	hash := dep.Spec.Template.Annotations[workloadcontroller.AnnotationTemplateHash]
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: dep.Namespace, Name: dep.Name + "-" + hash[:min(len(hash), 8)], Labels: dep.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))},
		},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(int32(1)), Selector: dep.Spec.Selector, Template: dep.Spec.Template},
	}
	if err := k8s.Create(ctx, rs); apierrors.IsAlreadyExists(err) {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(rs), rs)).To(Succeed())
	} else {
		Expect(err).NotTo(HaveOccurred())
	}
	return startPod(ctx, rs.Name+"-"+suffix, rs, rs.Spec.Template)
}

// kubelet sets a pod's status the way the kubelet reports it.
func kubelet(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, ready bool, ip string, containers ...corev1.ContainerStatus) {
	Eventually(func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		readyStatus := corev1.ConditionFalse
		if ready {
			readyStatus = corev1.ConditionTrue
		}
		pod.Status.Phase = phase
		pod.Status.PodIP = ip
		if ip != "" {
			pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		} else {
			pod.Status.PodIPs = nil
		}
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: readyStatus},
		}
		pod.Status.ContainerStatuses = containers
		return k8s.Status().Update(ctx, pod)
	}).Should(Succeed())
}

// runningReady starts the node's StatefulSet pod and marks it Running and Ready.
func runningReady(ctx context.Context, n *valkeyv1.ValkeyNode, ip string) *corev1.Pod {
	pod := startStatefulSetPod(ctx, n)
	kubelet(ctx, pod, corev1.PodRunning, true, ip)
	Eventually(condition(ctx, n, valkeyv1.ConditionWorkloadReady)).Should(Equal("True/Ready"))
	return pod
}

// deletePod deletes a pod (unscheduled pods go at once, as there is no kubelet).
func deletePod(ctx context.Context, pod *corev1.Pod) {
	Expect(k8s.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
	Eventually(func() bool {
		return k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}) != nil
	}).Should(BeTrue())
}

// eventReasons lists "Type/Reason: note" of the events recorded on the node.
func eventReasons(ctx context.Context, n *valkeyv1.ValkeyNode) func() []string {
	return func() []string {
		list := &eventsv1.EventList{}
		Expect(k8s.List(ctx, list, client.InNamespace(n.Namespace))).To(Succeed())
		var out []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "ValkeyNode" && e.Regarding.Name == n.Name {
				out = append(out, e.Type+"/"+e.Reason+": "+e.Note)
			}
		}
		return out
	}
}
