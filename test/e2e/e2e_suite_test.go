// Package e2e proves the operator end to end on a real cluster, against the controllers
// deployed by kustomize (deploy/local) and the real Valkey image, checking what a user would
// check. It runs only when E2E_KUBECONFIG names the cluster's kubeconfig (`make e2e` sets
// it); otherwise, as in `go test ./...`, it skips. Valkey servers are reached at their pod
// IPs, which the local cluster routes to its own bridge only.
package e2e

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

const (
	operatorNamespace = "valkey-system"
	valkeyImage       = "valkey.local/valkey:dev"
	expandableClass   = "valkey-expandable"
	fixedClass        = "valkey-fixed"
)

var (
	kubeconfig string
	restConfig *rest.Config
	k8s        client.Client
	ctx        = context.Background()
)

func TestE2E(t *testing.T) {
	kubeconfig = os.Getenv("E2E_KUBECONFIG")
	if kubeconfig == "" {
		t.Skip("E2E_KUBECONFIG is not set: the end-to-end suite runs against a cluster with the operator deployed (make e2e)")
	}
	RegisterFailHandler(Fail)
	SetDefaultEventuallyPollingInterval(500 * time.Millisecond)
	RunSpecs(t, "Valkey operator end to end")
}

var _ = BeforeSuite(func() {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	restConfig = cfg
	s := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	Expect(valkeyv1.AddToScheme(s)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: s})
	Expect(err).NotTo(HaveOccurred())
})

// kubectl runs kubectl against the cluster and returns its combined output.
func kubectl(args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
