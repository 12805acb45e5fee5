package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// The operator-upgrade specs install the operator of an earlier commit (built from this
// repository's history by test/upgrade/previous.sh), run a persistent cluster under the WAIT 1
// writer, upgrade to this tree and check what a user would: nothing acknowledged lost, never
// two pods of the cluster down at once, each pod restarted at most once and only when its
// template changed (the changed fields are printed), and the objects' fields owned by
// server-side apply. One upgrades with `kubectl apply` (E2E_UPGRADE_PREVIOUS, then
// E2E_UPGRADE_CURRENT: deploy/local rendered) from a release whose StatefulSets have no
// serviceName, which must be made again with it without a restart of their own; the other
// with `helm upgrade` (E2E_UPGRADE_HELM_CHART: the earlier release's chart) to this tree's
// chart, whose CRDs it must upgrade. `make e2e-upgrade` runs both.
var _ = Describe("Operator upgrade", Label("upgrade"), func() {
	It("upgrades an earlier release in place under writes: one pod down at a time, nothing lost", func() {
		previous, current := os.Getenv("E2E_UPGRADE_PREVIOUS"), os.Getenv("E2E_UPGRADE_CURRENT")
		if previous == "" || current == "" {
			Skip("E2E_UPGRADE_PREVIOUS and E2E_UPGRADE_CURRENT name the manifests of the two releases (make e2e-upgrade)")
		}
		DeferCleanup(func() { installManifest(current) }) // whatever happens, this tree's operator is left running

		cluster := upgradeUnderWrites(upgradeCase{
			from:    os.Getenv("E2E_UPGRADE_FROM"),
			install: func() { installManifest(previous) },
			upgrade: func() { installManifest(current) },
			before: func(before map[string]appsv1.StatefulSet) {
				for name, sts := range before {
					Expect(sts.Spec.ServiceName).To(BeEmpty(), "%s: the earlier release made no serviceName", name)
				}
			},
			upgraded: func(c *valkeyv1.ValkeyCluster) {
				Eventually(func() []string { return withoutServiceName(c) }).WithTimeout(5*time.Minute).WithPolling(2*time.Second).
					Should(BeEmpty(), "every StatefulSet made again with its serviceName")
			},
			after: func(before, after map[string]appsv1.StatefulSet) {
				for name, sts := range after {
					Expect(sts.UID).NotTo(Equal(before[name].UID), "%s made again", name)
				}
			},
		})

		next := os.Getenv("E2E_UPGRADE_NEXT")
		if next == "" {
			return
		}
		By("a release that changes only the controllers' image (hence valkey-start's): no Valkey pod restarted")
		running := podUIDs(cluster)
		installManifest(next)
		waitLeader("workload-controller", "valkey.local/workload-controller:next")
		Consistently(func() map[string]string { return podUIDs(cluster) }).WithTimeout(20*time.Second).WithPolling(time.Second).
			Should(Equal(running), "no pod replaced")
		Expect(rollsPending(cluster)).To(BeEmpty())
		for name, sts := range statefulSets(cluster) {
			Expect(startImageOf(sts)).To(Equal("valkey.local/workload-controller:dev"), "%s keeps the valkey-start it runs", name)
		}
		AddReportEntry("operator upgrade, image only", fmt.Sprintf("workload controller :dev → :next: 0 of %d pods replaced", len(running)))
	})

	It("upgrades an earlier Helm release with helm upgrade: its CRDs too, one pod down at a time, nothing lost", func() {
		chart, current := os.Getenv("E2E_UPGRADE_HELM_CHART"), os.Getenv("E2E_UPGRADE_CURRENT")
		if chart == "" || current == "" || os.Getenv("HELM") == "" {
			Skip("E2E_UPGRADE_HELM_CHART, E2E_UPGRADE_CURRENT and HELM name the earlier chart, this tree's manifest and Helm (make e2e-upgrade)")
		}
		tag := os.Getenv("E2E_UPGRADE_HELM_TAG")
		removeManifest(current) // Helm installs the controllers itself; the CRDs stay
		DeferCleanup(func() {
			_, _ = helm("uninstall", helmRelease, "-n", operatorNamespace, "--wait")
			installManifest(current)
		})

		upgradeUnderWrites(upgradeCase{
			from: os.Getenv("E2E_UPGRADE_HELM_FROM") + " (helm)",
			install: func() {
				// The earlier chart kept its CRDs in crds/, which Helm installs only where
				// there are none: those of that release are applied as they were.
				out, err := kubectl("apply", "--server-side", "--force-conflicts", "-f", filepath.Join(chart, "crds"))
				Expect(err).NotTo(HaveOccurred(), out)
				helmInstall("install", chart, tag)
			},
			upgrade: func() {
				// Once, from a chart with crds/: the CRDs become the release's.
				helmInstall("upgrade", filepath.Join(repoRoot(), "deploy", "helm", "valkey-operator"), "dev", "--take-ownership")
				for _, crd := range []string{"valkeyclusters.valkey.io", "valkeynodes.valkey.io", "valkeybackups.valkey.io", "valkeybackupschedules.valkey.io"} {
					Expect(crdAnnotation(crd, "meta.helm.sh/release-name")).To(Equal(helmRelease), "%s belongs to the release", crd)
					Expect(crdAnnotation(crd, "helm.sh/resource-policy")).To(Equal("keep"), "%s is kept by helm uninstall", crd)
				}
				Expect(crdSchema("valkeyclusters.valkey.io")).To(ContainSubstring(`"autoGrow"`), "helm upgrade brought this tree's CRD schema")
			},
		})
	})
})

// upgradeCase is one operator upgrade: the earlier release installed, then this tree, and
// what a case checks of its own before, right after the upgrade and once Ready.
type upgradeCase struct {
	from             string
	install, upgrade func()
	before           func(map[string]appsv1.StatefulSet)
	upgraded         func(*valkeyv1.ValkeyCluster)
	after            func(before, after map[string]appsv1.StatefulSet)
}

// upgradeUnderWrites runs an upgrade under the WAIT 1 writer and checks what every upgrade
// must hold; it returns the cluster, upgraded and Ready.
func upgradeUnderWrites(uc upgradeCase) *valkeyv1.ValkeyCluster {
	By("the earlier release installed, a 3 × 1 persistent cluster Ready under it")
	uc.install()
	ns := newNamespace("opupgrade")
	cluster := newCluster(ns, "up", 3, 1, persistence("1Gi", expandableClass, valkeyv1.ReclaimDelete))
	waitReady(cluster, 5*time.Minute)
	before := statefulSets(cluster)
	if uc.before != nil {
		uc.before(before)
	}
	pw := password(cluster)
	roles := map[string]valkeyv1.Role{}
	for _, n := range clusterNodes(cluster) {
		roles[n.Name] = n.Status.Topology.Role
	}
	rec := recordApprovals(cluster, pw)
	pods := watchPods(cluster, 6)
	w := startAckWriter(cluster, "opupgrade")

	By("this tree installed over it")
	start := time.Now()
	uc.upgrade()
	if uc.upgraded != nil {
		uc.upgraded(cluster)
	}
	waitReady(cluster, 10*time.Minute)
	took := time.Since(start)
	acked, refused := w.stop()
	approvals := rec.stop()
	maxDown, uids := pods.stop()
	lost, unreadable := lostKeys(cluster, "opupgrade", acked)

	after := statefulSets(cluster)
	changed := map[string][]string{}
	for name, sts := range after {
		changed[name] = templateChanges(before[name].Spec.Template, sts.Spec.Template)
	}
	restarted := 0
	for _, u := range uids {
		restarted += len(u) - 1
	}
	GinkgoWriter.Printf("operator upgrade from %s: %s; acked=%d refused=%v lost=%d; pods restarted %d; at most %d down at once; approvals %v\n",
		uc.from, took.Round(time.Second), len(acked), refused, lost, restarted, maxDown, approvals)
	byChanges := map[string][]string{}
	for _, name := range sortedKeys(changed) {
		fields := strings.Join(changed[name], ", ")
		byChanges[fields] = append(byChanges[fields], name)
	}
	for fields, names := range byChanges {
		GinkgoWriter.Printf("  template fields changed in %s: %s\n", strings.Join(names, " "), fields)
	}
	AddReportEntry("operator upgrade", fmt.Sprintf("from %s in %s; acked=%d lost=%d; pods restarted %d, at most %d down at once",
		uc.from, took.Round(time.Second), len(acked), lost, restarted, maxDown))

	Expect(lost + unreadable).To(BeZero())
	Expect(maxDown).To(BeNumerically("<=", 1), "never two pods of the cluster down at once")
	revisions := templateRevisions(cluster)
	for name, u := range uids {
		sts := strings.TrimSuffix(name, "-0")
		if len(changed[sts]) == 0 {
			Expect(u).To(HaveLen(1), "%s: its template did not change: not restarted", name)
			continue
		}
		// Two templates given within a second (the node's spec changed right after its
		// roll was applied) restart the pod once.
		Expect(len(u)-1).To(And(BeNumerically(">=", 1), BeNumerically("<=", revisions[sts]-1)),
			"%s: restarted once for each template its StatefulSet was given, at most", name)
	}
	GinkgoWriter.Printf("  templates applied per StatefulSet (the earlier release's one included): %v\n", revisions)
	if restarted > 0 {
		Expect(rec.maxConcurrent()).To(Equal(1), "never two nodes approved at once")
		expectReplicasFirst(approvals, roles)
	}
	if uc.after != nil {
		uc.after(before, after)
	}
	for _, p := range clusterPods(cluster) {
		Expect(p.Spec.Subdomain).To(Equal("valkey-up-nodes"), "%s has its DNS name", p.Name)
	}
	Expect(updateOwners(cluster)).To(BeEmpty(), "no field of an applied object owned by update")
	expectClusterCheck(cluster)
	return cluster
}

// waitLeader waits until the controller's leader Lease is held by one of its pods that
// runs image.
func waitLeader(controller, image string) {
	EventuallyWithOffset(1, func() string {
		var lease coordinationv1.Lease
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: controller + ".valkey.io"}, &lease); err != nil {
			return err.Error()
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		for _, p := range controllerPods(strings.TrimSuffix(controller, "-controller")) {
			if strings.HasPrefix(holder, p.Name) && p.Spec.Containers[0].Image == image {
				return ""
			}
		}
		return "held by " + holder
	}).WithTimeout(2 * time.Minute).Should(BeEmpty())
}

// startImageOf is the valkey-start image of a StatefulSet's pod template.
func startImageOf(sts appsv1.StatefulSet) string {
	for _, c := range sts.Spec.Template.Spec.InitContainers {
		if c.Name == "install-valkey-start" {
			return c.Image
		}
	}
	return ""
}

// templateRevisions counts the pod templates each StatefulSet of the cluster was given
// (its ControllerRevisions, the earlier release's adopted with the pod).
func templateRevisions(c *valkeyv1.ValkeyCluster) map[string]int {
	var list appsv1.ControllerRevisionList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name})).To(Succeed())
	out := map[string]int{}
	for _, r := range list.Items {
		if ref := metav1.GetControllerOf(&r); ref != nil {
			out[ref.Name]++
		}
	}
	return out
}

// installManifest applies a rendered deploy/local and waits for its controllers.
func installManifest(path string) {
	out, err := kubectl("apply", "--server-side", "--force-conflicts", "-f", path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	out, err = kubectl("-n", operatorNamespace, "rollout", "status", "deployment", "--timeout=300s")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// statefulSets are the cluster's StatefulSets by name.
func statefulSets(c *valkeyv1.ValkeyCluster) map[string]appsv1.StatefulSet {
	var list appsv1.StatefulSetList
	ExpectWithOffset(1, k8s.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name})).To(Succeed())
	out := map[string]appsv1.StatefulSet{}
	for _, s := range list.Items {
		out[s.Name] = s
	}
	return out
}

// withoutServiceName names the cluster's StatefulSets without the headless Service as
// serviceName, or being deleted.
func withoutServiceName(c *valkeyv1.ValkeyCluster) []string {
	var out []string
	for name, s := range statefulSets(c) {
		if s.Spec.ServiceName != "valkey-"+c.Name+"-nodes" || s.DeletionTimestamp != nil {
			out = append(out, name)
		}
	}
	if len(out) == 0 && len(statefulSets(c)) != int(c.Spec.Shards*(1+c.Spec.Replicas)) {
		out = append(out, "(some missing)")
	}
	return out
}

// podWatch samples the cluster's pods: the most not Ready at once (missing ones count), and
// every UID each pod name had.
type podWatch struct {
	mu      sync.Mutex
	maxDown int
	uids    map[string]map[string]bool
	stopc   chan struct{}
	done    chan struct{}
}

func watchPods(c *valkeyv1.ValkeyCluster, want int) *podWatch {
	p := &podWatch{uids: map[string]map[string]bool{}, stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			var pods corev1.PodList
			if err := k8s.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name}); err == nil {
				ready := 0
				p.mu.Lock()
				for _, pod := range pods.Items {
					if p.uids[pod.Name] == nil {
						p.uids[pod.Name] = map[string]bool{}
					}
					p.uids[pod.Name][string(pod.UID)] = true
					if isReady(&pod) && pod.DeletionTimestamp == nil {
						ready++
					}
				}
				p.maxDown = max(p.maxDown, want-ready)
				p.mu.Unlock()
			}
			select {
			case <-p.stopc:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *podWatch) stop() (maxDown int, uids map[string][]string) {
	close(p.stopc)
	<-p.done
	uids = map[string][]string{}
	for name, set := range p.uids {
		for u := range set {
			uids[name] = append(uids[name], u)
		}
	}
	return p.maxDown, uids
}

// templateChanges lists the JSON paths at which two pod templates differ, with the template
// hash annotation left out.
func templateChanges(a, b corev1.PodTemplateSpec) []string {
	flat := func(t corev1.PodTemplateSpec) map[string]string {
		t = *t.DeepCopy()
		delete(t.Annotations, "valkey.io/template-hash")
		raw, err := json.Marshal(t)
		ExpectWithOffset(2, err).NotTo(HaveOccurred())
		var v any
		ExpectWithOffset(2, json.Unmarshal(raw, &v)).To(Succeed())
		out := map[string]string{}
		flatten("", v, out)
		return out
	}
	fa, fb := flat(a), flat(b)
	seen := map[string]bool{}
	for k, v := range fa {
		if fb[k] != v {
			seen[fieldOf(k)] = true
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			seen[fieldOf(k)] = true
		}
	}
	return sortedKeys(seen)
}

// fieldOf names the field a leaf path belongs to: the path up to its second list index
// (.spec.containers[0].env[1].name is .spec.containers[0].env), or without a last index.
func fieldOf(path string) string {
	var idx []int
	for i, r := range path {
		if r == '[' {
			idx = append(idx, i)
		}
	}
	switch {
	case len(idx) >= 2:
		return path[:idx[1]]
	case len(idx) == 1 && strings.HasSuffix(path, "]"):
		return path[:idx[0]]
	}
	return path
}

// flatten writes v's leaves as path → JSON value.
func flatten(path string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			flatten(path+"."+k, e, out)
		}
	case []any:
		for i, e := range t {
			flatten(fmt.Sprintf("%s[%d]", path, i), e, out)
		}
	default:
		b, _ := json.Marshal(t)
		out[path] = string(b)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// updateOwners lists the fields of the cluster's StatefulSets and ConfigMaps still owned by
// update under one of the operator's field managers or binary names.
func updateOwners(c *valkeyv1.ValkeyCluster) []string {
	ours := map[string]bool{valkeyv1.FieldManagerWorkload: true, "workload-controller": true, valkeyv1.FieldManagerTopology: true, "topology-controller": true}
	var out []string
	check := func(kind string, o metav1.Object) {
		for _, m := range o.GetManagedFields() {
			if m.Subresource == "" && m.Operation == metav1.ManagedFieldsOperationUpdate && ours[m.Manager] {
				out = append(out, kind+" "+o.GetName()+": "+m.Manager)
			}
		}
	}
	for _, s := range statefulSets(c) {
		check("StatefulSet", &s)
	}
	var cms corev1.ConfigMapList
	ExpectWithOffset(1, k8s.List(ctx, &cms, client.InNamespace(c.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: c.Name})).To(Succeed())
	for i := range cms.Items {
		check("ConfigMap", &cms.Items[i])
	}
	return out
}
