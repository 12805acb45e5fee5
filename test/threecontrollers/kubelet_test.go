package threecontrollers_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeystart"
	"valkey.io/operator/test/valkeyserver"
)

// kubelet plays what envtest lacks, as far as the controllers can see: the StatefulSet
// controller (pod <sts>-0 from the template, replaced when the template changes, the
// StatefulSet's status), the kubelet (a real Valkey server per pod on its own loopback
// address, the pod Running and Ready at that address), the volume binder (a claim is Bound
// once its pod exists) and the garbage collector (ValkeyNodes and StatefulSets whose owner
// is gone are deleted). A pod's data directory is its claim's: it outlives the pod.
type kubelet struct {
	c      client.Client
	ns     string
	mu     sync.Mutex
	pods   map[string]*runningPod // by StatefulSet name
	dirs   map[string]string      // data directory by StatefulSet name
	rolled []string               // StatefulSets whose pod was replaced, in order
	cancel context.CancelFunc
	done   chan struct{}
}

// runningPod is a pod and its server.
type runningPod struct {
	name, revision string
	srv            *valkeyserver.Server
}

// nextIP numbers the pods' loopback addresses (127.230.x.y: apart from the topology
// suite's).
var nextIP atomic.Int32

func podIP() string {
	n := nextIP.Add(1)
	return fmt.Sprintf("127.230.%d.%d", n/200, n%200+10)
}

func startKubelet(c client.Client, ns string) *kubelet {
	ctx, cancel := context.WithCancel(context.Background())
	k := &kubelet{c: c, ns: ns, pods: map[string]*runningPod{}, dirs: map[string]string{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(k.done)
		for ctx.Err() == nil {
			if err := k.tick(ctx); err != nil && ctx.Err() == nil {
				GinkgoWriter.Printf("kubelet: %v\n", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return k
}

// stop stops the loop and every server.
func (k *kubelet) stop() {
	k.cancel()
	<-k.done
	k.mu.Lock()
	defer k.mu.Unlock()
	for name, p := range k.pods {
		_ = p.srv.Kill()
		delete(k.pods, name)
	}
	for _, dir := range k.dirs {
		_ = os.RemoveAll(dir)
	}
}

// tick brings the pods in line with the StatefulSets, and binds the claims.
func (k *kubelet) tick(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var list appsv1.StatefulSetList
	if err := k.c.List(ctx, &list, client.InNamespace(k.ns)); err != nil {
		return err
	}
	present := map[string]bool{}
	for i := range list.Items {
		sts := &list.Items[i]
		if !sts.DeletionTimestamp.IsZero() {
			continue
		}
		present[sts.Name] = true
		if err := k.sync(ctx, sts); err != nil {
			return fmt.Errorf("%s: %w", sts.Name, err)
		}
	}
	for name, p := range k.pods {
		if !present[name] {
			if err := k.remove(ctx, name, p); err != nil {
				return err
			}
		}
	}
	if err := k.collectGarbage(ctx); err != nil {
		return err
	}
	return k.bindClaims(ctx)
}

// collectGarbage deletes the ValkeyNodes whose cluster is gone and the StatefulSets whose
// node is gone, as the garbage collector does (background propagation).
func (k *kubelet) collectGarbage(ctx context.Context) error {
	var clusters valkeyv1.ValkeyClusterList
	var nodes valkeyv1.ValkeyNodeList
	var sets appsv1.StatefulSetList
	for _, l := range []client.ObjectList{&clusters, &nodes, &sets} {
		if err := k.c.List(ctx, l, client.InNamespace(k.ns)); err != nil {
			return err
		}
	}
	live := map[types.UID]bool{}
	for i := range clusters.Items {
		live[clusters.Items[i].UID] = true
	}
	for i := range nodes.Items {
		live[nodes.Items[i].UID] = true
	}
	var orphans []client.Object
	for i := range nodes.Items {
		orphans = append(orphans, orphaned(&nodes.Items[i], live)...)
	}
	for i := range sets.Items {
		orphans = append(orphans, orphaned(&sets.Items[i], live)...)
	}
	for _, o := range orphans {
		if err := k.c.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}

// orphaned is o when its controller is not among the live UIDs (and o is not deleted yet).
func orphaned(o client.Object, live map[types.UID]bool) []client.Object {
	ref := metav1.GetControllerOf(o)
	if ref == nil || live[ref.UID] || !o.GetDeletionTimestamp().IsZero() {
		return nil
	}
	return []client.Object{o}
}

// sync replaces the pod of sts when its template changed (RollingUpdate: the old pod goes,
// then the new one starts on the same claim), starts it when it is missing, and reports
// the StatefulSet's status.
func (k *kubelet) sync(ctx context.Context, sts *appsv1.StatefulSet) error {
	rev := revision(sts)
	if p := k.pods[sts.Name]; p != nil && p.revision != rev {
		if err := k.remove(ctx, sts.Name, p); err != nil {
			return err
		}
		k.rolled = append(k.rolled, sts.Name)
	}
	if k.pods[sts.Name] == nil {
		started, err := k.start(ctx, sts, rev)
		if err != nil || !started {
			return err
		}
	}
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
		CurrentReplicas: 1, UpdatedReplicas: 1, CurrentRevision: rev, UpdateRevision: rev,
	}
	return client.IgnoreNotFound(k.c.Status().Update(ctx, sts))
}

// revision names a StatefulSet's template, as its controller-revision-hash does.
func revision(sts *appsv1.StatefulSet) string {
	b, _ := json.Marshal(sts.Spec.Template)
	h := fnv.New32a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%s-%x", sts.Name, h.Sum32())
}

// start runs the server of sts's node and creates its pod, Running and Ready at the
// server's address. It waits (false) while the node's Secrets are not there yet.
func (k *kubelet) start(ctx context.Context, sts *appsv1.StatefulSet, rev string) (bool, error) {
	var n valkeyv1.ValkeyNode
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: k.ns, Name: strings.TrimPrefix(sts.Name, "valkey-")}, &n); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if k.dirs[sts.Name] == "" {
		dir, err := os.MkdirTemp("", "trio-"+sts.Name+"-")
		if err != nil {
			return false, err
		}
		k.dirs[sts.Name] = dir
	}
	auth, err := authInclude(ctx, k.c, &n, k.dirs[sts.Name])
	if err != nil {
		return false, nil //nolint:nilerr // the Secrets come a moment later: the next tick tries again
	}
	srv, err := valkeyserver.Start(valkeyserver.Options{
		Host: podIP(), Port: 6379, Cluster: true, Dir: k.dirs[sts.Name],
		Config: []string{"cluster-node-timeout 2000", "save 3600 1", "include " + auth},
	})
	if err != nil {
		return false, err
	}
	pod := podOf(sts, rev)
	if err := k.c.Create(ctx, pod); err != nil {
		_ = srv.Kill()
		return false, err
	}
	pod.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: srv.Host, PodIPs: []corev1.PodIP{{IP: srv.Host}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		},
	}
	if err := k.c.Status().Update(ctx, pod); err != nil {
		_ = srv.Kill()
		return false, err
	}
	k.pods[sts.Name] = &runningPod{name: pod.Name, revision: rev, srv: srv}
	return true, nil
}

// podOf is pod <sts>-0 of sts's template at revision rev.
func podOf(sts *appsv1.StatefulSet, rev string) *corev1.Pod {
	labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: rev}
	for k, v := range sts.Spec.Template.Labels {
		labels[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: sts.Name + "-0", Namespace: sts.Namespace, Labels: labels, Annotations: sts.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "StatefulSet", Name: sts.Name, UID: sts.UID, Controller: ptr.To(true),
			}},
		},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
}

// remove stops a pod's server (SIGTERM: it saves its data, as in a pod) and deletes the pod.
func (k *kubelet) remove(ctx context.Context, sts string, p *runningPod) error {
	if err := p.srv.Stop(); err != nil {
		return err
	}
	err := k.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: k.ns, Name: p.name}}, client.GracePeriodSeconds(0))
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	delete(k.pods, sts)
	return nil
}

// bindClaims binds every Pending claim whose pod exists, with the capacity it requests.
func (k *kubelet) bindClaims(ctx context.Context) error {
	var list corev1.PersistentVolumeClaimList
	if err := k.c.List(ctx, &list, client.InNamespace(k.ns)); err != nil {
		return err
	}
	for i := range list.Items {
		pvc := &list.Items[i]
		if pvc.Status.Phase == corev1.ClaimBound || !k.mounted(pvc.Name) {
			continue
		}
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]}
		if err := k.c.Status().Update(ctx, pvc); err != nil && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// mounted tells whether a running pod mounts the claim named name (valkey-<node>-data).
func (k *kubelet) mounted(claim string) bool {
	_, ok := k.pods[strings.TrimSuffix(claim, "-data")]
	return ok
}

// replaced are the StatefulSets whose pod was replaced, in order.
func (k *kubelet) replaced() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.rolled...)
}

// addrs are the addresses of the running servers.
func (k *kubelet) addrs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, p := range k.pods {
		out = append(out, p.srv.Addr())
	}
	return out
}

// running tells how many servers run.
func (k *kubelet) running() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.pods)
}

// authInclude writes a cluster node's auth file as valkey-start does in its pod (the
// operator's user from its Secret, the users of the ACL Secret; the replication user off
// while dir has no nodes.conf), and returns its path.
func authInclude(ctx context.Context, c client.Client, n *valkeyv1.ValkeyNode, dir string) (string, error) {
	var op, users corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.OperatorSecretName(n.Spec.ClusterName)}, &op); err != nil {
		return "", err
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.ACLSecretName(n.Spec.ClusterName)}, &users); err != nil {
		return "", err
	}
	bin, err := valkeyserver.Binary()
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "trio-auth-*.conf")
	if err != nil {
		return "", err
	}
	body := valkeystart.UsersConfig(valkeyv1.OperatorUser, string(op.Data[valkeyv1.DefaultPasswordKey]), string(users.Data[valkeyv1.ACLFileKey]), valkeystart.BinaryMajor(bin), valkeystart.HoldsReplication(dir))
	if _, err := f.WriteString(body); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}
