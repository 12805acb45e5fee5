package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The faults of the chaos suite. Each returns once the fault has happened and been noticed
// (a container restarted, a pod replaced, a controller back), not once the cluster recovered.

var controllers = []string{"volume", "workload", "topology"}

// killServer kills the node's valkey-server with SIGKILL, as an OOM kill does, and waits
// until the kubelet has restarted the container. kit in the container signals it; when the
// server is the container's PID 1 the kernel ignores a SIGKILL from inside the container, so
// it is then sent from the node (the local cluster's containerd).
func killServer(n valkeyv1.ValkeyNode) {
	pod := getPod(n)
	restarts, id := containerState(pod, "valkey")
	out, err := kubectl("-n", n.Namespace, "exec", pod.Name, "-c", "valkey", "--", "kit", "kill", "KILL", "valkey-server")
	switch {
	case err != nil && strings.Contains(out, "pid 1 survived"):
		out, err = localCluster("signal", id, "SIGKILL")
	case err != nil && strings.Contains(out, "sent signal 9"):
		err = nil // the container ended with its server (a start wrapper exits too), and kit with it
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	GinkgoWriter.Printf("killed valkey-server of %s (%s): %s", n.Name, pod.Name, out)
	EventuallyWithOffset(1, func(g Gomega) {
		p := getPod(n)
		now, _ := containerState(p, "valkey")
		g.Expect(now).To(BeNumerically(">", restarts), "%s restarted", p.Name)
		g.Expect(isReady(p)).To(BeTrue(), "%s Ready", p.Name)
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// deletePod deletes the node's pod with kubectl (extra flags, e.g. a forced deletion) and
// waits until its replacement is Ready and the node reports its IP.
func deletePod(n valkeyv1.ValkeyNode, flags ...string) {
	pod := getPod(n)
	out, err := kubectl(append([]string{"-n", n.Namespace, "delete", "pod", pod.Name, "--wait=false"}, flags...)...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	waitReplaced(n, pod.UID)
}

// deleteClaimAndPod deletes the node's claim by hand, then its pod, which holds the claim
// until it goes (docs/contract.md, "Hand-deleted claim"), and waits until the node runs
// again on a new claim.
func deleteClaimAndPod(n valkeyv1.ValkeyNode) {
	var pvc corev1.PersistentVolumeClaim
	key := client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.ClaimName(n.Name)}
	ExpectWithOffset(1, k8s.Get(ctx, key, &pvc)).To(Succeed())
	out, err := kubectl("-n", n.Namespace, "delete", "pvc", pvc.Name, "--wait=false")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	deletePod(n)
	EventuallyWithOffset(1, func(g Gomega) {
		var now corev1.PersistentVolumeClaim
		g.Expect(k8s.Get(ctx, key, &now)).To(Succeed())
		g.Expect(now.UID).NotTo(Equal(pvc.UID), "a new claim")
		g.Expect(now.Status.Phase).To(Equal(corev1.ClaimBound))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// waitReplaced waits until the node's pod has another UID than old, is Ready, and the node
// reports its IP.
func waitReplaced(n valkeyv1.ValkeyNode, old types.UID) {
	EventuallyWithOffset(2, func(g Gomega) {
		var cur valkeyv1.ValkeyNode
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(&n), &cur)).To(Succeed())
		g.Expect(cur.Status.Workload).NotTo(BeNil())
		var p corev1.Pod
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: cur.Status.Workload.PodName}, &p)).To(Succeed())
		g.Expect(p.UID).NotTo(Equal(old), "%s replaced", p.Name)
		g.Expect(isReady(&p)).To(BeTrue(), "%s Ready", p.Name)
		g.Expect(cur.Status.Workload.PodIP).To(Equal(p.Status.PodIP), "%s reports the new pod's IP", n.Name)
	}).WithTimeout(3 * time.Minute).Should(Succeed())
}

func getPod(n valkeyv1.ValkeyNode) *corev1.Pod {
	var cur valkeyv1.ValkeyNode
	ExpectWithOffset(2, k8s.Get(ctx, client.ObjectKeyFromObject(&n), &cur)).To(Succeed())
	ExpectWithOffset(2, cur.Status.Workload).NotTo(BeNil(), "%s has no status.workload", n.Name)
	var p corev1.Pod
	ExpectWithOffset(2, k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: cur.Status.Workload.PodName}, &p)).To(Succeed())
	return &p
}

// containerState is a container's restart count and ID.
func containerState(p *corev1.Pod, name string) (int32, string) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == name {
			return s.RestartCount, s.ContainerID
		}
	}
	return 0, ""
}

// killControllers force-deletes the pod of each controller at once and waits until each
// Deployment runs a new Ready pod.
func killControllers() {
	old := map[types.UID]bool{}
	for _, c := range controllers {
		for _, p := range controllerPods(c) {
			old[p.UID] = true
		}
		out, err := kubectl("-n", operatorNamespace, "delete", "pod", "-l", "app.kubernetes.io/component="+c+"-controller",
			"--grace-period=0", "--force", "--wait=false")
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	}
	GinkgoWriter.Printf("killed the pods of the %v controllers\n", controllers)
	EventuallyWithOffset(1, func(g Gomega) {
		for _, c := range controllers {
			ready := 0
			for _, p := range controllerPods(c) {
				if !old[p.UID] && isReady(&p) {
					ready++
				}
			}
			g.Expect(ready).To(BeNumerically(">=", 1), "a new %s controller pod Ready", c)
		}
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

func controllerPods(c string) []corev1.Pod {
	var pods corev1.PodList
	ExpectWithOffset(2, k8s.List(ctx, &pods, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/component": c + "-controller"})).To(Succeed())
	return pods.Items
}

// topologyReplicas is the topology controller's replica count as deployed.
func topologyReplicas() int32 {
	var d appsv1.Deployment
	ExpectWithOffset(1, k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "valkey-topology-controller"}, &d)).To(Succeed())
	return ptr.Deref(d.Spec.Replicas, 1)
}

// scaleTopology sets the topology controller's replicas and waits until that many pods run
// (none left at 0).
func scaleTopology(replicas int32) {
	out, err := kubectl("-n", operatorNamespace, "scale", "deployment/valkey-topology-controller", fmt.Sprintf("--replicas=%d", replicas))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	EventuallyWithOffset(1, func(g Gomega) {
		pods := controllerPods("topology")
		g.Expect(pods).To(HaveLen(int(replicas)))
		for _, p := range pods {
			g.Expect(isReady(&p)).To(BeTrue(), "%s Ready", p.Name)
		}
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "valkey-topology-controller"}, &d)).To(Succeed())
		g.Expect(d.Status.ReadyReplicas).To(Equal(replicas))
	}).WithTimeout(2 * time.Minute).Should(Succeed())
}

// restartAPIServer stops the local cluster's API server and starts it again; it returns once
// the API server is ready.
func restartAPIServer() {
	out, err := localCluster("restart", "kube-apiserver")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	GinkgoWriter.Printf("%s", out)
}

// localCluster runs test/localcluster/cluster.sh on the cluster whose kubeconfig the suite
// uses (its state folder holds the kubeconfig).
func localCluster(args ...string) (string, error) {
	cmd := exec.Command("../localcluster/cluster.sh", args...)
	cmd.Env = append(cmd.Environ(), "LOCAL_CLUSTER_DIR="+filepath.Dir(kubeconfig))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// clusterEvent reports whether the cluster has an event with reason since the given time.
func clusterEvent(c *valkeyv1.ValkeyCluster, reason string, since time.Time) bool {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Kind == "ValkeyCluster" && e.Regarding.Name == c.Name && e.Reason == reason &&
			!e.EventTime.Time.Before(since.Truncate(time.Second)) {
			return true
		}
	}
	return false
}

// warningEvents are the Warning events with reason about the object kind/name in namespace ns.
func warningEvents(ns, kind, name, reason string) []eventsv1.Event {
	var list eventsv1.EventList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && e.Reason == reason && e.Regarding.Kind == kind && e.Regarding.Name == name {
			out = append(out, e)
		}
	}
	return out
}
