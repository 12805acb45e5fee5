// Package smoke checks that the local single-node cluster (test/localcluster) does what the
// operator relies on: a Ready node, Valkey pods on dynamic volumes, identity kept on the volume
// across pod deletion, online volume growth, a class that refuses growth, garbage collection and
// the deletion of released volumes.
//
// It runs only when E2E_KUBECONFIG names the cluster's kubeconfig (`make e2e-smoke` sets it);
// otherwise, as in `go test ./...`, it skips. It must run on the node itself (it looks at the
// volumes' backing files and loop devices).
package smoke

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"
)

const (
	valkeyImage       = "valkey.local/valkey:dev"
	expandableClass   = "valkey-expandable"
	fixedClass        = "valkey-fixed"
	annBackingFile    = "valkey.local/loop-backing-file"
	waitTimeout       = 3 * time.Minute
	statefulSetName   = "valkey"
	dataVolume        = "data"
	valkeyContainer   = "valkey"
	valkeyPod         = statefulSetName + "-0"
	firstClaimOfStore = dataVolume + "-" + valkeyPod
)

type env struct {
	t   *testing.T
	cfg *rest.Config
	cs  kubernetes.Interface
	ns  string
}

func setup(t *testing.T) *env {
	t.Helper()
	kc := os.Getenv("E2E_KUBECONFIG")
	if kc == "" {
		t.Skip("E2E_KUBECONFIG is not set: the smoke suite runs against the local cluster (make cluster-up e2e-smoke)")
	}
	if _, err := os.Stat(kc); err != nil {
		t.Fatalf("E2E_KUBECONFIG=%s: %v (is the local cluster up? make cluster-up)", kc, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cfg: cfg, cs: cs}
}

// eventually polls cond every 250ms until it returns true or the timeout passes.
func (e *env) eventually(what string, timeout time.Duration, cond func(ctx context.Context) (bool, error)) time.Duration {
	e.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			took := time.Since(start).Round(10 * time.Millisecond)
			e.t.Logf("%s after %s", what, took)
			return took
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			e.t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// exec runs a command in a container and returns its standard output.
func (e *env) exec(pod, container string, cmd ...string) (string, error) {
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.ns).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: container, Command: cmd, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, "POST", req.URL())
	if err != nil {
		return "", err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return stdout.String(), fmt.Errorf("exec %v in %s: %w: %s", cmd, pod, err, stderr.String())
	}
	return stdout.String(), nil
}

func (e *env) podReady(name string, notUID types.UID) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.UID == notUID {
			return false, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, fmt.Errorf("pod %s is %s", name, p.Status.Phase)
	}
}

// clusterOK waits until the Valkey node in pod reports cluster_state:ok.
func (e *env) clusterOK(pod string) {
	e.t.Helper()
	e.eventually("cluster_state:ok", time.Minute, func(context.Context) (bool, error) {
		out, err := e.exec(pod, valkeyContainer, "valkey-cli", "cluster", "info")
		return strings.Contains(out, "cluster_state:ok"), err
	})
}

// dfSize is the size in bytes of the file system holding /data, seen from inside the pod.
func (e *env) dfSize(pod string) int64 {
	e.t.Helper()
	out, err := e.exec(pod, valkeyContainer, "kit", "df", "/data")
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "size="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				e.t.Fatal(err)
			}
			return n
		}
	}
	e.t.Fatalf("kit df: unexpected output %q", out)
	return 0
}

// restricted is the security context every test pod uses: non-root, read-only root, no capabilities.
func restricted() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000),
			FSGroup: ptr.To[int64](1000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, &corev1.SecurityContext{
			ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
}

func valkeyStatefulSet(ns string) *appsv1.StatefulSet {
	labels := map[string]string{"app": statefulSetName}
	podSec, sec := restricted()
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: statefulSetName, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: statefulSetName,
			Replicas:    ptr.To[int32](1),
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](5),
					SecurityContext:               podSec,
					Containers: []corev1.Container{{
						Name:  valkeyContainer,
						Image: valkeyImage,
						Args: []string{"--port", "6379", "--cluster-enabled", "yes", "--dir", "/data",
							"--cluster-config-file", "nodes.conf", "--protected-mode", "no", "--appendonly", "no"},
						Ports:           []corev1.ContainerPort{{Name: "valkey", ContainerPort: 6379}, {Name: "bus", ContainerPort: 16379}},
						SecurityContext: sec,
						ReadinessProbe: &corev1.Probe{
							ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"valkey-cli", "ping"}}},
							PeriodSeconds: 1,
						},
						VolumeMounts: []corev1.VolumeMount{{Name: dataVolume, MountPath: "/data"}},
					}},
				},
			},
			// No storageClassName: the cluster's default class (valkey-expandable) applies.
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: dataVolume},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// TestSmoke runs its steps in order in one namespace; it stops when a step the others need
// (a Ready node, the Valkey StatefulSet) fails.
func TestSmoke(t *testing.T) {
	e := setup(t)
	e.createNamespace()
	// run runs one step as a subtest, with e reporting to it.
	run := func(name string, step func(*testing.T, *env)) bool {
		return t.Run(name, func(t *testing.T) {
			e := *e
			e.t = t
			step(t, &e)
		})
	}
	if !run("NodeReady", testNodeReady) {
		return
	}
	if !run("StatefulSetOnDynamicVolume", testStatefulSetOnDynamicVolume) {
		return
	}
	var nodeID string
	run("NodeIDSurvivesPodDeletion", func(t *testing.T, e *env) { t.Helper(); testNodeIDSurvivesPodDeletion(t, e, &nodeID) })
	run("OnlineExpansion", func(t *testing.T, e *env) { t.Helper(); testOnlineExpansion(t, e, nodeID) })
	run("FixedClassRefusesExpansion", testFixedClassRefusesExpansion)
	run("GarbageCollection", testGarbageCollection)
	run("ReleasedVolumesAreDeleted", testReleasedVolumesAreDeleted)
}

// createNamespace creates the namespace the steps run in, deleted at the end unless the
// test failed.
func (e *env) createNamespace() {
	t := e.t
	ctx := context.Background()
	e.ns = fmt.Sprintf("smoke-%06d", rand.IntN(1000000))
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("keeping namespace %s for inspection", e.ns)
			return
		}
		_ = e.cs.CoreV1().Namespaces().Delete(context.Background(), e.ns, metav1.DeleteOptions{})
	})
	t.Logf("namespace %s", e.ns)
}

// testNodeReady waits for a Ready node and logs its kubelet and runtime versions.
func testNodeReady(t *testing.T, e *env) {
	e.eventually("a Ready node", time.Minute, func(ctx context.Context) (bool, error) {
		nodes, err := e.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, n := range nodes.Items {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					t.Logf("node %s Ready, kubelet %s, runtime %s", n.Name, n.Status.NodeInfo.KubeletVersion, n.Status.NodeInfo.ContainerRuntimeVersion)
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// testStatefulSetOnDynamicVolume runs Valkey in a StatefulSet whose claim the default class
// provisions on a loop device with XFS, makes it a one-node cluster owning every slot and
// saves a key to the volume.
func testStatefulSetOnDynamicVolume(t *testing.T, e *env) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: statefulSetName, Namespace: e.ns},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": statefulSetName},
			Ports: []corev1.ServicePort{{Name: "valkey", Port: 6379}}},
	}
	if _, err := e.cs.CoreV1().Services(e.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.AppsV1().StatefulSets(e.ns).Create(ctx, valkeyStatefulSet(e.ns), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("Valkey pod Ready on a dynamic volume", waitTimeout, e.podReady(valkeyPod, ""))
	pvc, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, firstClaimOfStore, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ptr.Deref(pvc.Spec.StorageClassName, ""); got != expandableClass {
		t.Errorf("claim class %q, want the default %q", got, expandableClass)
	}
	pv, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pv.Spec.Local == nil || !strings.HasPrefix(pv.Spec.Local.Path, "/dev/loop") || ptr.Deref(pv.Spec.Local.FSType, "") != "xfs" {
		t.Errorf("volume source %+v, want a loop device with xfs", pv.Spec.Local)
	}
	id, err := e.exec(valkeyPod, valkeyContainer, "kit", "id")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := e.exec(valkeyPod, valkeyContainer, "kit", "ls", "/data")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("volume %s on %s; in the pod: %s/data: %s", pv.Name, pv.Spec.Local.Path, strings.TrimSpace(id), strings.ReplaceAll(strings.TrimSpace(ls), "\n", "; "))
	if !strings.Contains(id, "uid=1000") {
		t.Errorf("valkey runs as %q, want uid 1000", id)
	}
	// A one-node Valkey cluster that owns every slot, with a key saved to the volume.
	if out, err := e.exec(valkeyPod, valkeyContainer, "valkey-cli", "cluster", "addslotsrange", "0", "16383"); err != nil || strings.TrimSpace(out) != "OK" {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %q %v", out, err)
	}
	e.clusterOK(valkeyPod)
	for _, cmd := range [][]string{{"set", "smoke", "kept"}, {"save"}} {
		if out, err := e.exec(valkeyPod, valkeyContainer, append([]string{"valkey-cli"}, cmd...)...); err != nil || strings.TrimSpace(out) != "OK" {
			t.Fatalf("%v: %q %v", cmd, out, err)
		}
	}
}

// testNodeIDSurvivesPodDeletion deletes the pod and checks that its replacement has the same node
// ID (from nodes.conf on the volume), its slots and its data; it records the node ID.
func testNodeIDSurvivesPodDeletion(t *testing.T, e *env, learned *string) {
	ctx := context.Background()
	out, err := e.exec(valkeyPod, valkeyContainer, "valkey-cli", "cluster", "myid")
	if err != nil {
		t.Fatal(err)
	}
	nodeID := strings.TrimSpace(out)
	*learned = nodeID // for the later steps, even if this one fails below
	conf, err := e.exec(valkeyPod, valkeyContainer, "kit", "cat", "/data/nodes.conf")
	if err != nil || !strings.Contains(conf, nodeID) || len(nodeID) != 40 {
		t.Fatalf("node ID %q not in /data/nodes.conf (%v): %s", nodeID, err, conf)
	}
	old, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, valkeyPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, valkeyPod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("pod recreated and Ready", waitTimeout, e.podReady(valkeyPod, old.UID))
	out, err = e.exec(valkeyPod, valkeyContainer, "valkey-cli", "cluster", "myid")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out); got != nodeID {
		t.Fatalf("node ID changed across pod deletion: %s -> %s", nodeID, got)
	}
	e.clusterOK(valkeyPod)
	if out, err := e.exec(valkeyPod, valkeyContainer, "valkey-cli", "get", "smoke"); err != nil || strings.TrimSpace(out) != "kept" {
		t.Errorf("GET after pod deletion: %q %v, want kept", out, err)
	}
	t.Logf("node ID %s, its slots and its data kept across pod deletion", nodeID)
}

// testOnlineExpansion grows the claim from 1Gi to 2Gi and checks that the file system grows inside
// the running valkeyPod, without a restart and with the same node ID.
func testOnlineExpansion(t *testing.T, e *env, nodeID string) {
	ctx := context.Background()
	before := e.dfSize(valkeyPod)
	p0, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, valkeyPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`)
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Patch(ctx, firstClaimOfStore, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("claim capacity 2Gi", waitTimeout, func(ctx context.Context) (bool, error) {
		c, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, firstClaimOfStore, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		q := c.Status.Capacity[corev1.ResourceStorage]
		return q.Cmp(resource.MustParse("2Gi")) >= 0, nil
	})
	var after int64
	e.eventually("file system grown inside the pod", time.Minute, func(context.Context) (bool, error) {
		after = e.dfSize(valkeyPod)
		return after >= before+900<<20, nil
	})
	t.Logf("df /data inside the pod: %d MiB -> %d MiB", before>>20, after>>20)
	p1, err := e.cs.CoreV1().Pods(e.ns).Get(ctx, valkeyPod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p1.UID != p0.UID || p1.Status.ContainerStatuses[0].RestartCount != p0.Status.ContainerStatuses[0].RestartCount {
		t.Errorf("the pod was restarted: growth was not online")
	}
	if out, err := e.exec(valkeyPod, valkeyContainer, "valkey-cli", "cluster", "myid"); err != nil || strings.TrimSpace(out) != nodeID {
		t.Errorf("after growth: node ID %q (%v), want %s", out, err, nodeID)
	}
}

// testFixedClassRefusesExpansion mounts a claim of the fixed class (rounded up to the XFS minimum)
// and checks that growing it is refused.
func testFixedClassRefusesExpansion(t *testing.T, e *env) {
	ctx := context.Background()
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed", Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(fixedClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("100Mi")}},
		},
	}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	podSec, sec := restricted()
	user := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "fixed-user", Namespace: e.ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               podSec,
			Containers: []corev1.Container{{
				Name: valkeyContainer, Image: valkeyImage, Command: []string{"kit", "sleep", "0"},
				SecurityContext: sec,
				VolumeMounts:    []corev1.VolumeMount{{Name: dataVolume, MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{Name: dataVolume, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "fixed"}}}},
		},
	}
	if _, err := e.cs.CoreV1().Pods(e.ns).Create(ctx, user, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("pod on a fixed-size volume Ready", waitTimeout, e.podReady("fixed-user", ""))
	c, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "fixed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := c.Status.Capacity[corev1.ResourceStorage]; q.String() != "300Mi" {
		t.Errorf("capacity of a 100Mi claim: %s, want 300Mi (the XFS minimum)", q.String())
	}
	if size := e.dfSize("fixed-user"); size < 200<<20 {
		t.Errorf("file system of %d MiB", size>>20)
	}
	patch := []byte(`{"spec":{"resources":{"requests":{"storage":"1Gi"}}}}`)
	_, err = e.cs.CoreV1().PersistentVolumeClaims(e.ns).Patch(ctx, "fixed", types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		t.Fatalf("growing a claim of class %s was accepted", fixedClass)
	}
	t.Logf("growth refused: %v", err)
}

// testGarbageCollection checks that an owned object is collected after its owner is deleted.
func testGarbageCollection(t *testing.T, e *env) {
	ctx := context.Background()
	owner, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "child", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
	}}}}
	if _, err := e.cs.CoreV1().ConfigMaps(e.ns).Create(ctx, child, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().ConfigMaps(e.ns).Delete(ctx, owner.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatal(err)
	}
	e.eventually("owned object collected", time.Minute, func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().ConfigMaps(e.ns).Get(ctx, "child", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// testReleasedVolumesAreDeleted deletes the pods and claims and checks that their volumes, backing
// files and loop devices go too.
func testReleasedVolumesAreDeleted(t *testing.T, e *env) {
	ctx := context.Background()
	claims, err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	type vol struct{ name, file, dev string }
	var vols []vol
	for _, c := range claims.Items {
		pv, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		vols = append(vols, vol{pv.Name, pv.Annotations[annBackingFile], pv.Spec.Local.Path})
	}
	if len(vols) != 2 {
		t.Fatalf("%d volumes, want 2", len(vols))
	}
	grace := metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}
	if err := e.cs.AppsV1().StatefulSets(e.ns).Delete(ctx, statefulSetName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{valkeyPod, "fixed-user"} {
		if err := e.cs.CoreV1().Pods(e.ns).Delete(ctx, p, grace); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, c := range claims.Items {
		if err := e.cs.CoreV1().PersistentVolumeClaims(e.ns).Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range vols {
		e.eventually("volume "+v.name+" deleted", waitTimeout, func(ctx context.Context) (bool, error) {
			_, err := e.cs.CoreV1().PersistentVolumes().Get(ctx, v.name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if _, err := os.Stat(v.file); !os.IsNotExist(err) {
			t.Errorf("backing file %s of %s still there (%v)", v.file, v.name, err)
		}
		backing, _ := os.ReadFile(filepath.Join("/sys/block", filepath.Base(v.dev), "loop", "backing_file"))
		if strings.TrimSpace(string(backing)) == v.file {
			t.Errorf("%s still backed by %s", v.dev, v.file)
		}
	}
}
