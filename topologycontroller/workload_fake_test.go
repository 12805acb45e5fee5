package topologycontroller_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/valkey-io/valkey-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/internal/valkeystart"
	"valkey.io/operator/test/valkeyserver"
)

// Every test server listens on port 6379 (the controller's default) of its own loopback
// address, as pods do on their own IPs. A restarted "pod" gets a new address. The second
// byte depends on the process, so that two test binaries running at once (two checkouts on
// one machine) rarely share an address, which would mix up their clusters.
var nextIP atomic.Int32

// ipBase is the second byte of this process's loopback addresses (set by BeforeSuite).
var ipBase int

// loopbackBlock is the second byte of this process's loopback addresses: 20-119 on Valkey,
// 120-219 on Redis, so the suite's runs on both (alongside, in make test) never share one;
// within a run, each parallel process has its own (up to five).
func loopbackBlock() int {
	base := 20 + (os.Getppid()%20)*5 + (GinkgoParallelProcess()-1)%5
	if filepath.Base(os.Getenv("VALKEY_SERVER")) == "redis-server" {
		base += 100
	}
	return base
}

func newPodIP() string {
	n := nextIP.Add(1)
	return fmt.Sprintf("127.%d.%d.%d", ipBase, n/200, n%200+10)
}

// fullSyncAtOnce is the operator's rendered default (internal/valkeyconf): a replica's full
// sync starts at once instead of after Valkey's 5 s wait for more replicas to share it.
const fullSyncAtOnce = "repl-diskless-sync-delay 0"

// fakeWorkload plays the workload controller (and, for nodes with the pvc-protection
// finalizer, the volume controller's wait for Drained): it runs a real server per ValkeyNode
// and reports status.workload, WorkloadReady and RollPending with the workload field manager.
type fakeWorkload struct {
	ns    string
	mu    sync.Mutex
	srv   map[string]*valkeyserver.Server
	roll  map[string]bool   // roll pending: the spec's image differs from the running one
	image map[string]string // image the node's server "runs"
	gen   map[string]int64  // generation last reported
	empty map[string]bool   // the next restart loses /data
	// waitVolume reports the node's roll as waiting for its claim (RollPending=False,
	// WaitingForVolume), as when persistence is being enabled.
	waitVolume map[string]bool
	cancel     context.CancelFunc
	done       chan struct{}

	maxApproved int
	approvals   []approval

	// held nodes are left alone (a workload controller that is down or slow): their server
	// runs on, and a test reports their workload status itself.
	held map[string]bool

	// tlsDirs are the nodes' certificate "volumes" (see mountTLS).
	tlsDirs map[string]string
	// legacy servers start as before the operator had its own user: requirepass only.
	legacy bool
	// config are more lines of every server's config (cluster-databases 16, say).
	config []string
	// snapshots are the data directories "snapshotted" by takeSnapshot, by snapshot name:
	// a node with spec.restore starts on a copy of one (see restoredDir).
	snapshots map[string]string
	// retained are the claims an earlier cluster or a deleted node left under a node's claim
	// name (reclaimPolicy Retain), by node name: a later node of that name starts on one the
	// volume controller played adopts (see release, and restoredDir for a restored node).
	retained map[string]retainedClaim
}

// retainedClaim is a claim left under a node's claim name: the data directory it holds, and
// whether the volume controller played adopts it, as it did before it refused to for a
// restored node.
type retainedClaim struct {
	dir     string
	adopted bool
}

// approval is a roll approval as the workload saw it, with the node's role at that moment.
type approval struct {
	node, reason, role string
}

// startFakeWorkload runs the fake workload of ns; its servers' config has the lines of
// config besides the suite's own.
func startFakeWorkload(ns string, config ...string) *fakeWorkload {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeWorkload{ns: ns, srv: map[string]*valkeyserver.Server{}, roll: map[string]bool{}, image: map[string]string{}, gen: map[string]int64{}, empty: map[string]bool{}, waitVolume: map[string]bool{}, cancel: cancel, done: make(chan struct{}), config: config}
	go func() {
		defer GinkgoRecover()
		defer close(f.done)
		for ctx.Err() == nil {
			if err := f.tick(ctx); err != nil && ctx.Err() == nil {
				GinkgoWriter.Printf("fake workload: %v\n", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return f
}

// stop stops the loop and every server.
func (f *fakeWorkload) stop() {
	f.cancel()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, s := range f.srv {
		_ = s.Kill()
		_ = os.RemoveAll(s.Dir)
		delete(f.srv, name)
	}
	for name, kept := range f.retained {
		_ = os.RemoveAll(kept.dir)
		delete(f.retained, name)
	}
}

func (f *fakeWorkload) tick(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var list valkeyv1.ValkeyNodeList
	if err := k8s.List(ctx, &list, client.InNamespace(f.ns)); err != nil {
		return err
	}
	present := map[string]bool{}
	approved := 0
	for i := range list.Items {
		n := &list.Items[i]
		present[n.Name] = true
		if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			approved++
		}
		if !n.DeletionTimestamp.IsZero() {
			if status.IsTrue(n.Status.Conditions, valkeyv1.ConditionDrained) {
				if s := f.srv[n.Name]; s != nil {
					_ = s.Stop()
					delete(f.srv, n.Name)
					f.release(n, s.Dir)
				}
				if controllerutil.ContainsFinalizer(n, valkeyv1.PVCProtectionFinalizer) {
					controllerutil.RemoveFinalizer(n, valkeyv1.PVCProtectionFinalizer)
					if err := k8s.Update(ctx, n); err != nil {
						return err
					}
				}
			}
			continue
		}
		s := f.srv[n.Name]
		if f.held[n.Name] && s != nil {
			continue
		}
		if s != nil {
			if _, err := f.mountTLS(ctx, n); err != nil {
				return err
			}
		}
		if s == nil {
			dir, ready, err := f.restoredDir(ctx, n)
			if err != nil {
				return err
			}
			if !ready {
				continue // its claim waits for its snapshot
			}
			if kept, ok := f.retained[n.Name]; dir == "" && ok && kept.adopted {
				dir = kept.dir // the retained claim, adopted
				delete(f.retained, n.Name)
			}
			if s, err = f.startServer(ctx, n, dir); err != nil {
				return err
			}
			f.srv[n.Name] = s
			f.image[n.Name] = n.Spec.Image
			if err := f.report(ctx, n, true, s.Host); err != nil {
				return err
			}
			continue
		}
		if f.gen[n.Name] != n.Generation {
			// A new spec: a roll is pending when the template (here: the image) changed.
			f.roll[n.Name] = n.Spec.Image != f.image[n.Name]
			if err := f.report(ctx, n, true, s.Host); err != nil {
				return err
			}
			continue
		}
		if f.roll[n.Name] && status.IsCurrentTrue(n, n.Status.Conditions, valkeyv1.ConditionRollApproved) {
			c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollApproved)
			f.approvals = append(f.approvals, approval{node: n.Name, reason: c.Reason, role: serverRole(s.Addr(), n)})
			if err := f.stopLocked(ctx, n); err != nil {
				return err
			}
			if err := f.startLocked(ctx, n); err != nil {
				return err
			}
			f.roll[n.Name] = false
			f.image[n.Name] = n.Spec.Image
			if err := f.report(ctx, n, true, f.srv[n.Name].Host); err != nil {
				return err
			}
		}
	}
	f.maxApproved = max(f.maxApproved, approved)
	for name, s := range f.srv {
		if !present[name] {
			_ = s.Stop()
			delete(f.srv, name)
		}
	}
	return nil
}

// release plays the volume controller's reclaim policy for a deleted node that was
// drained: its data directory is kept for a later node of its name under Retain, removed
// under Delete (without persistence it is an emptyDir, gone with the pod).
func (f *fakeWorkload) release(n *valkeyv1.ValkeyNode, dir string) {
	if p := n.Spec.Persistence; p != nil && p.EffectiveReclaimPolicy() == valkeyv1.ReclaimRetain {
		if f.retained == nil {
			f.retained = map[string]retainedClaim{}
		}
		f.retained[n.Name] = retainedClaim{dir: dir, adopted: true}
		return
	}
	_ = os.RemoveAll(dir)
}

func (f *fakeWorkload) startServer(ctx context.Context, n *valkeyv1.ValkeyNode, dir string) (*valkeyserver.Server, error) {
	return f.startServerAt(ctx, n, dir, newPodIP())
}

// startServerAt starts the node's server at host (its pod's address).
func (f *fakeWorkload) startServerAt(ctx context.Context, n *valkeyv1.ValkeyNode, dir, host string) (*valkeyserver.Server, error) {
	if f.legacy {
		pw, err := nodePassword(ctx, n)
		if err != nil {
			return nil, err
		}
		return valkeyserver.Start(valkeyserver.Options{
			Host: host, Port: 6379, Cluster: true, Password: pw, Dir: dir,
			Config: append([]string{"cluster-node-timeout 2000", "save 3600 1", fullSyncAtOnce}, f.config...),
		})
	}
	// As a pod's valkey-start does: the auth file from the operator's Secret and the
	// cluster's ACL Secret, included by the config.
	auth, err := authInclude(ctx, n, dir == "" || valkeystart.HoldsReplication(dir))
	if err != nil {
		return nil, err
	}
	tlsDir, err := f.mountTLS(ctx, n)
	if err != nil {
		return nil, err
	}
	return valkeyserver.Start(valkeyserver.Options{
		Host: host, Port: 6379, Cluster: true, Dir: dir, TLSDir: tlsDir,
		Config: append([]string{"cluster-node-timeout 2000", "save 3600 1", "include " + auth, fullSyncAtOnce}, f.config...),
	})
}

// authInclude writes a cluster node's auth file as valkey-start does in its pod (with
// holdReplication when its data directory has no nodes.conf), and returns its path.
func authInclude(ctx context.Context, n *valkeyv1.ValkeyNode, holdReplication bool) (string, error) {
	var op, users corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.OperatorSecretName(n.Spec.ClusterName)}, &op); err != nil {
		return "", fmt.Errorf("operator Secret of %s: %w", n.Name, err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: valkeyv1.ACLSecretName(n.Spec.ClusterName)}, &users); err != nil {
		return "", fmt.Errorf("ACL Secret of %s: %w", n.Name, err)
	}
	f, err := os.CreateTemp("", "valkey-auth-*.conf")
	if err != nil {
		return "", err
	}
	body := valkeystart.UsersConfig(valkeyv1.OperatorUser, string(op.Data[valkeyv1.DefaultPasswordKey]), string(users.Data[valkeyv1.ACLFileKey]), serverMajor(), holdReplication)
	if _, err := f.WriteString(body); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// stopLocked stops the node's "pod" (its server); startLocked starts a new one at a new
// address, with the data directory of the old one (or an empty one).
func (f *fakeWorkload) stopLocked(ctx context.Context, n *valkeyv1.ValkeyNode) error {
	s := f.srv[n.Name]
	if err := f.reportPhase(ctx, n, false, valkeyv1.ReasonPodNotReady, s.Host); err != nil {
		return err
	}
	return s.Stop()
}

func (f *fakeWorkload) startLocked(ctx context.Context, n *valkeyv1.ValkeyNode) error {
	dir := f.srv[n.Name].Dir
	if f.empty[n.Name] {
		_ = os.RemoveAll(dir)
		dir = ""
		f.empty[n.Name] = false
	}
	s, err := f.startServer(ctx, n, dir)
	if err != nil {
		return err
	}
	f.srv[n.Name] = s
	return nil
}

// restart stops the servers of the nodes, then starts each again at a new address, with
// its data directory or, with emptyData, an empty one.
func (f *fakeWorkload) restart(names []string, emptyData bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := context.Background()
	for _, name := range names {
		f.empty[name] = emptyData
		Expect(f.stopLocked(ctx, getNode(f.ns, name))).To(Succeed())
	}
	for _, name := range names {
		n := getNode(f.ns, name)
		Expect(f.startLocked(ctx, n)).To(Succeed())
		Expect(f.report(ctx, n, true, f.srv[name].Host)).To(Succeed())
	}
}

// restartEmptyInPlace kills the node's server (-9), empties its data directory and starts
// it again at the same address, as a container restarted in its pod on a lost volume does:
// the pod is not ready meanwhile.
func (f *fakeWorkload) restartEmptyInPlace(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx := context.Background()
	n := getNode(f.ns, name)
	old := f.srv[name]
	Expect(f.reportPhase(ctx, n, false, valkeyv1.ReasonPodNotReady, old.Host)).To(Succeed())
	Expect(old.Kill()).To(Succeed())
	Expect(os.RemoveAll(old.Dir)).To(Succeed())
	s, err := f.startServerAt(ctx, n, "", old.Host)
	Expect(err).NotTo(HaveOccurred())
	f.srv[name] = s
	Expect(f.report(ctx, getNode(f.ns, name), true, s.Host)).To(Succeed())
}

func (f *fakeWorkload) report(ctx context.Context, n *valkeyv1.ValkeyNode, ready bool, ip string) error {
	return f.reportPhase(ctx, n, ready, valkeyv1.ReasonReady, ip)
}

func (f *fakeWorkload) reportPhase(ctx context.Context, n *valkeyv1.ValkeyNode, ready bool, reason, ip string) error {
	roll := status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonUpToDate, "")
	switch {
	case f.waitVolume[n.Name]:
		roll = status.Condition(valkeyv1.ConditionRollPending, false, valkeyv1.ReasonWaitingForVolume, "")
	case f.roll[n.Name]:
		roll = status.Condition(valkeyv1.ConditionRollPending, true, valkeyv1.ReasonTemplateChanged, "")
	}
	f.gen[n.Name] = n.Generation
	a := status.Applier{Client: k8s, FieldManager: valkeyv1.FieldManagerWorkload}
	return a.ApplyNode(ctx, n, status.WorkloadShare{
		Conditions: []metav1.Condition{status.Condition(valkeyv1.ConditionWorkloadReady, ready, reason, ""), roll},
		Workload: &valkeyv1.WorkloadStatus{
			Kind: "StatefulSet", Name: valkeyv1.WorkloadName(n.Name), PodName: valkeyv1.WorkloadName(n.Name) + "-0", PodIP: ip,
		},
	})
}

// hold leaves the nodes alone (or, with false, takes them back: their status is reported
// again on the next tick).
func (f *fakeWorkload) hold(held bool, names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held == nil {
		f.held = map[string]bool{}
	}
	for _, name := range names {
		f.held[name] = held
		f.gen[name] = 0
	}
}

// setWaitVolume holds (or releases) a node's roll as waiting for its claim; the next tick
// reports it again.
func (f *fakeWorkload) setWaitVolume(name string, wait bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waitVolume[name] = wait
	f.gen[name] = 0
}

// server returns the running server of a node.
func (f *fakeWorkload) server(name string) *valkeyserver.Server {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.srv[name]
}

// addrs are the addresses of every running server.
func (f *fakeWorkload) addrs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, s := range f.srv {
		out = append(out, s.Addr())
	}
	return out
}

func (f *fakeWorkload) stats() (int, []approval) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.maxApproved, append([]approval(nil), f.approvals...)
}

func nodePassword(ctx context.Context, n *valkeyv1.ValkeyNode) (string, error) {
	ref := n.PasswordSecretRef()
	if ref == nil {
		return "", nil
	}
	var s corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: ref.Name}, &s); err != nil {
		return "", fmt.Errorf("password of %s: %w", n.Name, err)
	}
	return string(s.Data[ref.Key]), nil
}

func getNode(ns, name string) *valkeyv1.ValkeyNode {
	var n valkeyv1.ValkeyNode
	ExpectWithOffset(1, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &n)).To(Succeed())
	return &n
}

// --- talking to the test servers -----------------------------------------------------

func single(addr, pw string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: pw, ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true, Dialer: net.Dialer{Timeout: time.Second}})
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	return c
}

func cmd(addr, pw string, args ...string) (string, error) {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, Password: pw, ForceSingleClient: true, DisableCache: true, AlwaysRESP2: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return "", err
	}
	defer c.Close()
	return c.Do(context.Background(), c.B().Arbitrary(args...).Build()).ToString()
}

func serverRole(addr string, n *valkeyv1.ValkeyNode) string {
	pw, _ := nodePassword(context.Background(), n)
	out, err := cmd(addr, pw, "INFO", "replication")
	if err != nil {
		return "unknown: " + err.Error()
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "role:"); ok {
			return v
		}
	}
	return "unknown"
}

// nodeLine is one line of CLUSTER NODES as the tests read it.
type nodeLine struct {
	id, addr, flags, primary string
	slots                    int
	open                     bool // a slot importing or migrating
}

func clusterNodes(addr, pw string) ([]nodeLine, error) {
	out, err := cmd(addr, pw, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	var lines []nodeLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if len(f) < 8 {
			continue
		}
		nl := nodeLine{id: f[0], addr: strings.Split(f[1], "@")[0], flags: f[2], primary: f[3]}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				nl.open = true
				continue
			}
			a, b, ok := strings.Cut(s, "-")
			x, _ := strconv.Atoi(a)
			y := x
			if ok {
				y, _ = strconv.Atoi(b)
			}
			nl.slots += y - x + 1
		}
		lines = append(lines, nl)
	}
	return lines, nil
}

func clusterInfo(addr, pw, key string) string {
	out, err := cmd(addr, pw, "CLUSTER", "INFO")
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), key+":"); ok {
			return v
		}
	}
	return ""
}

// checkHealthy fails unless every server says cluster_state:ok, the wanted number of
// primaries own all 16384 slots within one slot of each other, every primary has its
// replicas, and no slot is left importing or migrating.
func checkHealthy(f *fakeWorkload, pw string, shards, replicas int) error {
	addrs := f.addrs()
	if len(addrs) != shards*(1+replicas) {
		return fmt.Errorf("%d servers, want %d", len(addrs), shards*(1+replicas))
	}
	for _, a := range addrs {
		if s := clusterInfo(a, pw, "cluster_state"); s != "ok" {
			return fmt.Errorf("%s: cluster_state %q", a, s)
		}
		lines, err := clusterNodes(a, pw)
		if err != nil {
			return err
		}
		if len(lines) != len(addrs) {
			return fmt.Errorf("%s knows %d nodes, want %d", a, len(lines), len(addrs))
		}
		for _, l := range lines {
			// Primaries only: Valkey 8+ copies a primary's IMPORTING/MIGRATING states to its
			// replicas and leaves a copy on a replica whose full sync ends between the two
			// SETSLOTs of a slot (SETSLOT NODE is not sent to a replica still syncing).
			if strings.Contains(l.flags, "myself") && strings.Contains(l.flags, "master") && l.open {
				return fmt.Errorf("%s has an open slot migration", a)
			}
		}
		info, err := cmd(a, pw, "INFO", "replication")
		if err != nil {
			return err
		}
		if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: replication link down", a)
		}
	}
	lines, err := clusterNodes(addrs[0], pw)
	if err != nil {
		return err
	}
	total, lo, hi := 0, 1<<30, 0
	followers := map[string]int{}
	var primaries []nodeLine
	for _, l := range lines {
		if strings.Contains(l.flags, "master") {
			primaries = append(primaries, l)
			total += l.slots
			lo, hi = min(lo, l.slots), max(hi, l.slots)
		} else {
			followers[l.primary]++
		}
	}
	if len(primaries) != shards || total != 16384 || hi-lo > 1 {
		return fmt.Errorf("%d primaries own %d slots (min %d, max %d), want %d primaries with 16384 evenly", len(primaries), total, lo, hi, shards)
	}
	for _, p := range primaries {
		if followers[p.id] != replicas {
			return fmt.Errorf("primary %s has %d replicas, want %d", p.addr, followers[p.id], replicas)
		}
	}
	return nil
}

// clusterClient is a cluster-mode client of the test servers.
func clusterClient(f *fakeWorkload, pw string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: f.addrs(), Password: pw, DisableCache: true, Dialer: net.Dialer{Timeout: time.Second}})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return c
}

func keyName(i int) string { return fmt.Sprintf("key:%d", i) }

// writeKeys writes n keys through the cluster client.
func writeKeys(f *fakeWorkload, pw string, n int) {
	c := clusterClient(f, pw)
	defer c.Close()
	ctx := context.Background()
	for start := 0; start < n; start += 500 {
		var cmds valkey.Commands
		for i := start; i < min(n, start+500); i++ {
			cmds = append(cmds, c.B().Set().Key(keyName(i)).Value("v"+strconv.Itoa(i)).Build())
		}
		for _, r := range c.DoMulti(ctx, cmds...) {
			ExpectWithOffset(1, r.Error()).NotTo(HaveOccurred())
		}
	}
}

// readKeys returns how many of the n keys read back with their value.
func readKeys(f *fakeWorkload, pw string, n int) int {
	c := clusterClient(f, pw)
	defer c.Close()
	ctx := context.Background()
	ok := 0
	for start := 0; start < n; start += 500 {
		var cmds valkey.Commands
		for i := start; i < min(n, start+500); i++ {
			cmds = append(cmds, c.B().Get().Key(keyName(i)).Build())
		}
		for j, r := range c.DoMulti(ctx, cmds...) {
			want := "v" + strconv.Itoa(start+j)
			v, err := r.ToString()
			// A client retries what fails in transit (a redirection racing a slot move,
			// a connection to a node it just learned of, a slot map taken from a node
			// that has not learned the slots yet: valkey-go asks Valkey 8+ for CLUSTER
			// SHARDS, which such a node answers with no slots, where Redis 7's empty
			// CLUSTER SLOTS made it ask another): so does this reader, for up to a
			// second. A key that is really gone reads as nil and stays missing.
			for try := 0; err != nil && !valkey.IsValkeyNil(err) && try < 10; try++ {
				if try == 0 {
					GinkgoWriter.Printf("read %s: %v (retrying)\n", keyName(start+j), err)
				} else {
					time.Sleep(100 * time.Millisecond)
				}
				v, err = c.Do(ctx, c.B().Get().Key(keyName(start+j)).Build()).ToString()
			}
			if err == nil && v == want {
				ok++
			} else {
				GinkgoWriter.Printf("read %s: %q, %v (missing)\n", keyName(start+j), v, err)
			}
		}
	}
	return ok
}

// loseDataOnRestart makes the next restart of the nodes start with an empty /data (as a
// roll that adds persistence does: the old /data was an emptyDir).
func (f *fakeWorkload) loseDataOnRestart(names ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range names {
		f.empty[n] = true
	}
}

// serverMajor is the Valkey major version of the test servers' binary (0 for Redis).
func serverMajor() int {
	bin, err := valkeyserver.Binary()
	if err != nil {
		return 0
	}
	return valkeystart.BinaryMajor(bin)
}
