package topologycontroller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"valkey.io/operator/test/envtest"
	"valkey.io/operator/test/valkeyserver"
	"valkey.io/operator/topologycontroller"
)

func TestTopologyController(t *testing.T) {
	RegisterFailHandler(Fail)
	// Once, before the tree is built: a Describe body's call would set it for every spec.
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	RunSpecs(t, "topology controller")
}

var (
	env *envtest.Environment
	k8s client.Client
	mgr *runningManager
)

// testOptions keep migrations in small rounds so that a test can stop the controller
// in the middle of one.
var testOptions = topologycontroller.Options{
	DialTimeout:                500 * time.Millisecond,
	CommandTimeout:             5 * time.Second,
	MigrationBatchSize:         50,
	MigrationSlotsPerReconcile: 256,
	FailoverTimeout:            20 * time.Second,
	ResyncPeriod:               2 * time.Second,
	BackupCatchUpTimeout:       10 * time.Second,
	// Longer than any spec takes between a backup's last save and the cut it reports.
	BackupCutTimeout:  45 * time.Second,
	OperatorNamespace: "valkey-operator-system",
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ipBase = loopbackBlock()
	_, err := valkeyserver.Binary()
	Expect(err).NotTo(HaveOccurred())
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = env.Client()
	Expect(err).NotTo(HaveOccurred())
	mgr = startManager(testOptions)
})

var _ = AfterSuite(func() {
	if mgr != nil {
		mgr.stop()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// runningManager is the controller running in this process; stop it to play a crash.
type runningManager struct {
	cancel context.CancelFunc
	done   chan error
}

func startManager(opts topologycontroller.Options) *runningManager {
	m, err := env.NewManager(topologycontroller.CacheOptions())
	Expect(err).NotTo(HaveOccurred())
	Expect(topologycontroller.SetupWithManager(m, opts)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	rm := &runningManager{cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		rm.done <- m.Start(ctx)
	}()
	return rm
}

// stop stops the controller and waits until it has returned.
func (m *runningManager) stop() {
	m.cancel()
	Eventually(m.done, 60*time.Second).Should(Receive())
}

// runWith restarts the controller with opts, and with the suite's options when the spec ends.
func runWith(opts topologycontroller.Options) {
	mgr.stop()
	mgr = startManager(opts)
	DeferCleanup(func() {
		mgr.stop()
		mgr = startManager(testOptions)
	})
}

// newNamespace creates a fresh namespace for one spec (envtest never deletes namespaces).
func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "topology-"}}
	Expect(k8s.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}
