// Package threecontrollers_test runs the three controller binaries together, as they are
// deployed, against a real API server (envtest) and real Valkey servers: a cluster created,
// rolled, scaled out and deleted, with the conditions each controller writes checked as the
// others read them. envtest has no kube-controller-manager and no kubelet: kubelet_test.go
// plays them (pods from the StatefulSets, a Valkey server per pod, claims bound), and
// nothing else. Run with make test (KUBEBUILDER_ASSETS and VALKEY_SERVER set by the Makefile).
package threecontrollers_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"valkey.io/operator/test/bench"
	"valkey.io/operator/test/envtest"
)

func TestThreeControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "The three controllers together")
}

var (
	k8s   client.Client
	env   *envtest.Environment
	ctrls []*bench.Controller
	kube  *kubelet
)

// ns is the namespace of the suite's cluster.
const ns = "trio"

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(2 * time.Minute)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	c, err := env.Client()
	Expect(err).NotTo(HaveOccurred())
	k8s = c
	ctx := context.Background()
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	Expect(bench.CreateStorageClass(ctx, k8s)).To(Succeed())

	dir := GinkgoT().TempDir()
	By("building the three controllers")
	Expect(bench.Build(envtest.RepoRoot(), dir)).To(Succeed())
	kubeconfig := adminKubeconfig(dir)
	ctrls, err = bench.StartAll(bench.Launch{Dir: dir, Kubeconfig: kubeconfig, KubeconfigEnv: true})
	Expect(err).NotTo(HaveOccurred())
	kube = startKubelet(k8s, ns)
})

var _ = AfterSuite(func() {
	if kube != nil {
		kube.stop()
	}
	bench.StopAll(ctrls)
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// adminKubeconfig writes a kubeconfig of an admin of the API server into dir, for the
// binaries.
func adminKubeconfig(dir string) string {
	GinkgoHelper()
	user, err := env.AddUser(ctrlenvtest.User{Name: "operator", Groups: []string{"system:masters"}}, nil)
	Expect(err).NotTo(HaveOccurred())
	kubeconfig, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, "kubeconfig")
	Expect(os.WriteFile(path, kubeconfig, 0o600)).To(Succeed())
	return path
}
