package main

// Snapshot and restore on the local cluster (test/localcluster): the snapshot-controller of
// external-snapshotter and the loop provisioners, real pods writing and reading the volumes.
// The specs run only when E2E_KUBECONFIG names the cluster's kubeconfig (`make e2e-storage`);
// they run on the node itself (they look at the images in the disk folder next to it).

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

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/utils/ptr"
)

const (
	clusterImage   = "valkey.local/valkey:dev"
	clusterClass   = "valkey-expandable"
	snapshotClass  = "valkey-loop"
	clusterTimeout = 3 * time.Minute
)

type cluster struct {
	t       *testing.T
	cfg     *rest.Config
	cs      kubernetes.Interface
	snaps   snapclient.Interface
	ns      string
	diskDir string
}

// onCluster connects to the local cluster and makes a namespace for the spec (deleted after it).
func onCluster(t *testing.T) *cluster {
	t.Helper()
	kc := os.Getenv("E2E_KUBECONFIG")
	if kc == "" {
		t.Skip("E2E_KUBECONFIG is not set: these specs run against the local cluster (make cluster-up e2e-storage)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), snaps: snapclient.NewForConfigOrDie(cfg),
		ns: fmt.Sprintf("snap-%d", rand.IntN(1e6)), diskDir: filepath.Join(filepath.Dir(kc), "disks")}
	ctx := context.Background()
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.cs.CoreV1().Namespaces().Delete(ctx, c.ns, metav1.DeleteOptions{}) })
	return c
}

// eventually polls cond every 100ms until it holds, and returns how long that took.
func (c *cluster) eventually(what string, cond func(ctx context.Context) (bool, error)) time.Duration {
	c.t.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return time.Since(start)
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			c.t.Fatalf("timed out after %s waiting for %s (last error: %v)", clusterTimeout, what, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// claim creates a claim of size, restoring from snapshot when not "".
func (c *cluster) claim(name, size, snapshot string) {
	c.t.Helper()
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(clusterClass),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	if snapshot != "" {
		pvc.Spec.DataSource = &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(snapshotGroup), Kind: "VolumeSnapshot", Name: snapshot}
	}
	if _, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Create(context.Background(), pvc, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// pod runs args in the Valkey image with claim at /data, and waits until it runs.
func (c *cluster) pod(name, claim string, args ...string) {
	c.t.Helper()
	c.startPod(name, claim, args...)
	c.eventually("pod "+name+" running", func(ctx context.Context) (bool, error) {
		p, err := c.cs.CoreV1().Pods(c.ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
}

// startPod creates a pod running args in the Valkey image with claim at /data.
func (c *cluster) startPod(name, claim string, args ...string) {
	c.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			SecurityContext:               &corev1.PodSecurityContext{FSGroup: ptr.To[int64](1000)},
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "main", Image: clusterImage, Command: args,
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if _, err := c.cs.CoreV1().Pods(c.ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// exec runs cmd in pod and returns its output.
func (c *cluster) exec(pod string, cmd ...string) string {
	c.t.Helper()
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.ns).Name(pod).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: "main", Command: cmd, Stdout: true, Stderr: true,
	}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		c.t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		c.t.Fatal(err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		c.t.Fatalf("exec %v in %s: %v: %s", cmd, pod, err, stderr.String())
	}
	return stdout.String()
}

// snapshot creates a VolumeSnapshot of claim in class valkey-loop.
func (c *cluster) snapshot(name, claim string) {
	c.t.Helper()
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: snapv1.VolumeSnapshotSpec{
			VolumeSnapshotClassName: ptr.To(snapshotClass),
			Source:                  snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To(claim)},
		},
	}
	if _, err := c.snaps.SnapshotV1().VolumeSnapshots(c.ns).Create(context.Background(), vs, metav1.CreateOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// snapshotStatus is the status of VolumeSnapshot name (nil until it has one).
func (c *cluster) snapshotStatus(ctx context.Context, name string) (*snapv1.VolumeSnapshotStatus, error) {
	vs, err := c.snaps.SnapshotV1().VolumeSnapshots(c.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return vs.Status, nil
}

// waitReady waits until VolumeSnapshot name is ready to use, and returns its status.
func (c *cluster) waitReady(name string) *snapv1.VolumeSnapshotStatus {
	c.t.Helper()
	var st *snapv1.VolumeSnapshotStatus
	c.eventually("snapshot "+name+" ready", func(ctx context.Context) (bool, error) {
		var err error
		st, err = c.snapshotStatus(ctx, name)
		return st != nil && st.ReadyToUse != nil && *st.ReadyToUse, err
	})
	return st
}

// writeMarker starts Valkey on claim, sets a random value and saves it into /data/dump.rdb.
func (c *cluster) writeMarker(pod, claim string) string {
	c.t.Helper()
	c.pod(pod, claim, "valkey-server", "--dir", "/data", "--save", "", "--appendonly", "no")
	marker := fmt.Sprintf("marker-%016x", rand.Uint64())
	c.eventually("valkey answering in "+pod, func(context.Context) (bool, error) {
		return strings.TrimSpace(c.exec(pod, "valkey-cli", "PING")) == "PONG", nil
	})
	if out := c.exec(pod, "valkey-cli", "SET", "k", marker); strings.TrimSpace(out) != "OK" {
		c.t.Fatalf("SET: %q", out)
	}
	if out := c.exec(pod, "valkey-cli", "SAVE"); strings.TrimSpace(out) != "OK" {
		c.t.Fatalf("SAVE: %q", out)
	}
	return marker
}

// dfSize is the size of the file system at /data in pod.
func (c *cluster) dfSize(pod string) int64 {
	c.t.Helper()
	out := c.exec(pod, "kit", "df", "/data")
	for _, f := range strings.Fields(out) {
		if v, ok := strings.CutPrefix(f, "size="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				c.t.Fatal(err)
			}
			return n
		}
	}
	c.t.Fatalf("kit df: %q", out)
	return 0
}

// A written volume's snapshot is ready at once, holds the data when restored into a larger
// claim (whose file system has the larger size), refuses a claim smaller than it, and its image
// goes with the VolumeSnapshot.
func TestClusterSnapshotRestore(t *testing.T) {
	c := onCluster(t)
	ctx := context.Background()
	c.claim("source", "400Mi", "")
	marker := c.writeMarker("writer", "source")

	start := time.Now()
	c.snapshot("snap", "source")
	st := c.waitReady("snap")
	t.Logf("figure: VolumeSnapshot create to readyToUse: %s (polled every 100ms)", time.Since(start).Round(time.Millisecond))
	if st.RestoreSize == nil || st.RestoreSize.Value() != 400<<20 || st.Error != nil {
		t.Fatalf("status %+v: want restoreSize 400Mi and no error", st)
	}
	content := *st.BoundVolumeSnapshotContentName
	image := filepath.Join(c.diskDir, snapshotsFolder, content+".img")
	if _, err := os.Stat(image); err != nil {
		t.Fatalf("snapshot image: %v", err)
	}

	c.claim("too-small", "350Mi", "snap")
	c.startPod("too-small", "too-small", "kit", "sleep", "0") // a consumer: the scheduler picks its node
	c.eventually("RestoreTooSmall event on the smaller claim", func(ctx context.Context) (bool, error) {
		evs, err := c.cs.CoreV1().Events(c.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=too-small"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Reason == reasonRestoreTooSmall && strings.Contains(e.Message, "ask for at least 400Mi") {
				return true, nil
			}
		}
		return false, nil
	})

	restoreStart := time.Now()
	c.claim("restored", "1Gi", "snap")
	c.pod("reader", "restored", "kit", "sleep", "0")
	t.Logf("figure: restore (claim create to reader pod running): %s", time.Since(restoreStart).Round(time.Millisecond))
	if out := c.exec("reader", "kit", "cat", "/data/dump.rdb"); !strings.Contains(out, marker) {
		t.Fatalf("restored dump.rdb does not hold %s", marker)
	}
	if size := c.dfSize("reader"); size < 900<<20 {
		t.Fatalf("restored file system is %d bytes, want the claim's 1Gi (grown from the snapshot's 400Mi)", size)
	}
	pvc, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "too-small", metav1.GetOptions{})
	if err != nil || pvc.Spec.VolumeName != "" {
		t.Fatalf("the smaller claim was provisioned: %v %q", err, pvc.Spec.VolumeName)
	}

	// A claim still waiting to be restored holds the snapshot (the snapshot-controller defers the
	// deletion: SnapshotDeletePending): the refused claim goes first.
	if err := c.cs.CoreV1().Pods(c.ns).Delete(ctx, "too-small", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Delete(ctx, "too-small", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("the refused claim gone", func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "too-small", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err := c.snaps.SnapshotV1().VolumeSnapshots(c.ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.eventually("content and image removed", func(ctx context.Context) (bool, error) {
		_, err := c.snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content, metav1.GetOptions{})
		_, statErr := os.Stat(image)
		return apierrors.IsNotFound(err) && os.IsNotExist(statErr), nil
	})
	// The restored volume does not depend on the snapshot's image (reflink copies share blocks
	// until written).
	if out := c.exec("reader", "kit", "cat", "/data/dump.rdb"); !strings.Contains(out, marker) {
		t.Fatalf("restored dump.rdb lost %s once the snapshot was deleted", marker)
	}
}

// A snapshot that cannot be taken (here: the volume's file cannot be read) reports why on the
// VolumeSnapshot.
func TestClusterSnapshotFailure(t *testing.T) {
	c := onCluster(t)
	ctx := context.Background()
	c.claim("source", "300Mi", "")
	c.pod("holder", "source", "kit", "sleep", "0")
	pvc, err := c.cs.CoreV1().PersistentVolumeClaims(c.ns).Get(ctx, "source", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := c.cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The volume's file is out of reach (moved away; its loop device keeps it open, the pod runs
	// on), so the copy fails; it is moved back afterwards, for the volume's deletion.
	file := pv.Annotations[annBackingFile]
	if err := os.Rename(file, file+".away"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Rename(file+".away", file) })
	c.snapshot("snap", "source")
	var st *snapv1.VolumeSnapshotStatus
	c.eventually("the snapshot's error", func(ctx context.Context) (bool, error) {
		st, err = c.snapshotStatus(ctx, "snap")
		return st != nil && st.BoundVolumeSnapshotContentName != nil && st.Error != nil && st.Error.Message != nil &&
			strings.Contains(*st.Error.Message, "copying the image of "+pv.Name), err
	})
	if st.ReadyToUse == nil || *st.ReadyToUse {
		t.Fatalf("failed snapshot reports readyToUse %v", st.ReadyToUse)
	}
	t.Logf("VolumeSnapshot error: %s", *st.Error.Message)
}
