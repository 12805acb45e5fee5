package volumecontroller_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/valkeystart"
	"valkey.io/operator/volumecontroller"
)

// metricsPort is the port the controller reads valkey-start's metrics on (set in the suite).
var metricsPort int

// freePort is a TCP port nothing listens on at the moment.
func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// fakePod is the part of a node's pod the volume controller reads: valkey-start's own
// metrics handler on a small tmpfs standing for /data, served at a loopback address of its
// own (the pod's IP) on the controller's metrics port.
type fakePod struct {
	ip, dir     string
	persistence atomic.Pointer[valkeystart.PersistenceState]
}

func startFakePod(ip string, sizeMi int) *fakePod {
	if os.Geteuid() != 0 {
		Skip("mounting a small tmpfs needs root")
	}
	p := &fakePod{ip: ip, dir: GinkgoT().TempDir()}
	mount(p.dir, fmt.Sprintf("size=%dm", sizeMi))
	DeferCleanup(func() { _ = exec.Command("umount", "-l", p.dir).Run() })
	p.persistence.Store(valkeystart.NewPersistenceState(false, true, false))
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(metricsPort)))
	Expect(err).NotTo(HaveOccurred())
	handler, err := valkeystart.MetricsHandler(p.dir, &p.persistence)
	Expect(err).NotTo(HaveOccurred())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(l) }()
	DeferCleanup(func() { _ = srv.Close() })
	return p
}

func mount(dir, opts string) {
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "tmpfs", dir).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// grow remounts the tmpfs larger: the file system grown online, as the kubelet does.
func (p *fakePod) grow(sizeMi int) {
	out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%dm", sizeMi), p.dir).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
}

// write fills a file of the given size (the server's RDB or AOF growing).
func (p *fakePod) write(name string, sizeKi int) {
	Expect(os.WriteFile(filepath.Join(p.dir, name), make([]byte, sizeKi<<10), 0o600)).To(Succeed())
}

// setPodIP reports the node's pod at ip, as the workload controller does.
func setPodIP(ctx context.Context, node *valkeyv1.ValkeyNode, ip string) {
	Eventually(func() error {
		cur := getNode(ctx, node)
		base := cur.DeepCopy()
		cur.Status.Workload = &valkeyv1.WorkloadStatus{PodIP: ip}
		return k8s.Status().Patch(ctx, cur, client.MergeFrom(base), client.FieldOwner(valkeyv1.FieldManagerWorkload))
	}).Should(Succeed())
}

func usagePercent(ctx context.Context, node *valkeyv1.ValkeyNode) func() int32 {
	return func() int32 {
		v := getNode(ctx, node).Status.Volume
		if v == nil || v.Usage == nil {
			return -1
		}
		return v.Usage.Percent
	}
}

var _ = Describe("Volume usage and automatic growth", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = newNamespace(ctx) })

	autoGrowNode := func(ctx context.Context, class *storagev1.StorageClass, size, maxSize string) (*valkeyv1.ValkeyNode, *corev1.PersistentVolumeClaim) {
		node := newNode(ns, size, &class.Name, "")
		node.Spec.Persistence.AutoGrow = &valkeyv1.AutoGrowSpec{ThresholdPercent: 50, Increment: "50%", MaxSize: resource.MustParse(maxSize)}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		pvc := waitClaim(ctx, node)
		bind(ctx, pvc, size)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		return node, pvc
	}
	// measuredNode is a 16Mi node growing up to 64Mi whose pod (at ip) is measured healthy.
	measuredNode := func(ctx context.Context, class *storagev1.StorageClass, ip string) (*valkeyv1.ValkeyNode, *fakePod) {
		node, _ := autoGrowNode(ctx, class, "16Mi", "64Mi")
		pod := startFakePod(ip, 16)
		setPodIP(ctx, node, pod.ip)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("True/Healthy"))
		return node, pod
	}
	requested := func(ctx context.Context, node *valkeyv1.ValkeyNode) func() string {
		return func() string { return claimOf(ctx, node)().Spec.Resources.Requests.Storage().String() }
	}
	// resized plays the resizer and the kubelet: the file system grows, then the claim
	// reports the capacity it asked for.
	resized := func(ctx context.Context, pod *fakePod, pvc *corev1.PersistentVolumeClaim, sizeMi int) {
		pod.grow(sizeMi)
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(fmt.Sprintf("%dMi", sizeMi))}
		})
	}

	It("grows a claim past its threshold by the increment, one growth at a time, and stops at maxSize", func(ctx context.Context) {
		class := newClass(ctx, "grow-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node, pvc := autoGrowNode(ctx, class, "16Mi", "30Mi")
		pod := startFakePod("127.0.0.2", 16)
		setPodIP(ctx, node, pod.ip)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("True/Healthy"))
		Expect(usagePercent(ctx, node)()).To(BeNumerically("<", 10))

		By("the data passes half the volume: the claim grows by half")
		pod.write("dump.rdb", 9<<10)
		Eventually(requested(ctx, node)).Should(Equal("24Mi"))
		Expect(claimOf(ctx, node)().Annotations).To(HaveKeyWithValue(volumecontroller.AnnotationAutoGrownTo, "24Mi"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/AutoGrowing"))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("False/Resizing"))
		Consistently(requested(ctx, node), 3*time.Second).Should(Equal("24Mi"), "no second growth before the first is over")

		By("the file system and the claim have grown")
		resized(ctx, pod, pvc, 24)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/AutoGrown"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/AutoGrown"))
		Expect(getNode(ctx, node).Status.Volume.AutoGrownTo).To(Equal("24Mi"))
		Eventually(usagePercent(ctx, node)).Should(BeNumerically("<", 50))
		Consistently(requested(ctx, node), 3*time.Second).Should(Equal("24Mi"), "below the threshold on the grown volume")

		By("past the threshold again: the next growth stops at maxSize")
		pod.write("appendonly.aof", 5<<10)
		Eventually(requested(ctx, node)).Should(Equal("30Mi"))
		resized(ctx, pod, pvc, 30)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/AutoGrown"))

		By("at maxSize, past the threshold: said once, the claim stays")
		pod.write("temp.rdb", 2<<10)
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/AutoGrowLimitReached"))
		Consistently(requested(ctx, node), 3*time.Second).Should(Equal("30Mi"))

		By("full: VolumeHealthy=False, VolumeFull, with a Warning; freed: True again")
		pod.write("temp.rdb", 14<<10+600)
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("False/VolumeFull"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/VolumeUnhealthy"))
		Expect(os.Remove(filepath.Join(pod.dir, "temp.rdb"))).To(Succeed())
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("True/Healthy"))
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Normal/VolumeHealthy"))

		By("a manual size above the grown one takes over")
		Eventually(func() error {
			cur := getNode(ctx, node)
			cur.Spec.Persistence.Size = resource.MustParse("40Mi")
			cur.Spec.Persistence.AutoGrow.MaxSize = resource.MustParse("40Mi")
			return k8s.Update(ctx, cur)
		}).Should(Succeed())
		Eventually(requested(ctx, node)).Should(Equal("40Mi"))
		Eventually(func() string { return getNode(ctx, node).Status.Volume.AutoGrownTo }).Should(BeEmpty())
	})

	It("grows once from the capacity a provider rounded up to, and not again until the file system is larger", func(ctx context.Context) {
		class := newClass(ctx, "round-"+ns, true, storagev1.VolumeBindingImmediate, nil)
		node := newNode(ns, "16Mi", &class.Name, "")
		node.Spec.Persistence.AutoGrow = &valkeyv1.AutoGrowSpec{ThresholdPercent: 50, Increment: "50%", MaxSize: resource.MustParse("64Mi")}
		Expect(k8s.Create(ctx, node)).To(Succeed())
		pvc := waitClaim(ctx, node)
		bind(ctx, pvc, "20Mi") // the provider's volume is larger than asked
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/Sized"))
		pod := startFakePod("127.0.0.6", 20)
		setPodIP(ctx, node, pod.ip)
		pod.write("dump.rdb", 12<<10)
		Eventually(requested(ctx, node)).Should(Equal("30Mi"), "grown by half of the 20Mi the volume has")
		By("the provider rounds the new request up too: no second growth on a figure of the old file system")
		setClaimStatus(ctx, pvc, func(s *corev1.PersistentVolumeClaimStatus) {
			s.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("32Mi")}
		})
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeSized)).Should(Equal("True/AutoGrown"))
		pod.write("more", 1<<10) // a new figure, still of the 20Mi file system
		Consistently(requested(ctx, node), 4*time.Second).Should(Equal("30Mi"))
		Expect(countOf(eventReasons(ctx, node), "Normal/AutoGrowing")()).To(Equal(1))
	})

	It("reports a server that cannot save, and a class that cannot grow, once", func(ctx context.Context) {
		node, pod := measuredNode(ctx, newClass(ctx, "fixed-"+ns, false, storagev1.VolumeBindingImmediate, nil), "127.0.0.3")

		pod.persistence.Store(valkeystart.NewPersistenceState(true, true, true))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("False/PersistenceFailing"))
		c := getNode(ctx, node).Status.Conditions
		Expect(findMessage(c, valkeyv1.ConditionVolumeHealthy)).To(And(ContainSubstring("MISCONF"), ContainSubstring("BGSAVE"), ContainSubstring("AOF write")))
		pod.persistence.Store(valkeystart.NewPersistenceState(false, true, false))
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy)).Should(Equal("True/Healthy"))

		pod.write("dump.rdb", 9<<10)
		Eventually(eventReasons(ctx, node)).Should(ContainElement("Warning/ExpansionNotSupported"))
		Consistently(requested(ctx, node), 3*time.Second).Should(Equal("16Mi"))
		Expect(countOf(eventReasons(ctx, node), "Warning/ExpansionNotSupported")()).To(Equal(1))
	})

	It("writes the usage only when it changes meaningfully, and says when it cannot measure", func(ctx context.Context) {
		node, pod := measuredNode(ctx, newClass(ctx, "steady-"+ns, true, storagev1.VolumeBindingImmediate, nil), "127.0.0.4")
		writes := controllerWrites.in(ns)
		// The node's first status writes (claim, health, usage) may still be on their way
		// when it reports Healthy: count from the moment they stopped.
		before := -1
		Eventually(func() bool {
			now := writes()["PATCH valkeynodes/status"]
			settled := now == before
			before = now
			return settled
		}).WithPolling(time.Second).Should(BeTrue(), "the node's first status writes settle")
		Consistently(func() int { return writes()["PATCH valkeynodes/status"] }, 6*time.Second).Should(Equal(before),
			"six measurements of a steady volume, no status write")
		pod.write("small", 64) // under one point of 16Mi
		Consistently(func() int { return writes()["PATCH valkeynodes/status"] }, 3*time.Second).Should(Equal(before))
		pod.write("dump.rdb", 2<<10)
		Eventually(usagePercent(ctx, node)).Should(BeNumerically(">=", 12))
		// The write is counted once its request returns, which may be after the API server
		// shows it.
		Eventually(func() int { return writes()["PATCH valkeynodes/status"] }).Should(Equal(before + 1))

		By("the pod stops answering")
		setPodIP(ctx, node, "127.0.0.5")
		Eventually(condition(ctx, node, valkeyv1.ConditionVolumeHealthy), 2*volumecontroller.UnmeasuredAfter).Should(Equal("Unknown/NotMeasured"))
		Expect(findMessage(getNode(ctx, node).Status.Conditions, valkeyv1.ConditionVolumeHealthy)).To(ContainSubstring("last figure"))
	})
})

func findMessage(conds []metav1.Condition, t string) string {
	for _, c := range conds {
		if c.Type == t {
			return c.Message
		}
	}
	return ""
}
