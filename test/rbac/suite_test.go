// Package rbac_test checks the rights the deploy/ manifests grant, on a real API server:
// the RBAC objects kustomize renders from deploy/default and deploy/namespaced are applied
// to envtest, and SubjectAccessReviews ask what each controller's ServiceAccount may do,
// as `kubectl auth can-i --as=system:serviceaccount:<ns>:<sa>` would. The controllers are
// then run under those ServiceAccounts (impersonated) to show the rights are enough.
package rbac_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"valkey.io/operator/test/envtest"
)

var (
	env *envtest.Environment
	k8s client.Client
)

func TestRBAC(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "deploy RBAC")
}

var _ = BeforeSuite(func() {
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	var err error
	env, err = envtest.Start()
	Expect(err).NotTo(HaveOccurred())
	k8s, err = env.Client()
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// rbacKinds are the objects of a rendered install that grant rights.
var rbacKinds = map[string]bool{"ServiceAccount": true, "Role": true, "RoleBinding": true, "ClusterRole": true, "ClusterRoleBinding": true}

// install renders deploy/<dir> with kustomize (kubectl kustomize: no cluster is contacted)
// and applies its RBAC objects. For ns other than valkey-system it renders an overlay that
// sets the namespace the way README tells users to, so that every object and binding
// subject must land in ns on its own.
func install(ctx context.Context, dir, ns string) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		Skip("kubectl (for its built-in kustomize) is not on PATH: the deploy/ manifests cannot be rendered")
	}
	target := filepath.Join(envtest.RepoRoot(), "deploy", dir)
	if ns != "valkey-system" {
		target = overlay(target, ns)
	}
	out, err := exec.CommandContext(ctx, kubectl, "kustomize", target).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "kubectl kustomize %s: %s", target, out)
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Or(Succeed(), Satisfy(apierrors.IsAlreadyExists)))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	applied := 0
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			Expect(err).NotTo(HaveOccurred())
		}
		if !rbacKinds[u.GetKind()] {
			continue
		}
		Expect(u.GetNamespace()).To(Or(BeEmpty(), Equal(ns)), "%s %s", u.GetKind(), u.GetName())
		Expect(k8s.Create(ctx, &u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
		applied++
	}
	Expect(applied).To(BeNumerically(">=", 9), "three ServiceAccounts, their roles and bindings")
}

// overlay writes a kustomization that installs base into ns, as README shows.
func overlay(base, ns string) string {
	dir := GinkgoT().TempDir()
	rel, err := filepath.Rel(dir, base)
	Expect(err).NotTo(HaveOccurred())
	k := "resources:\n  - " + rel + "\ntransformers:\n  - |-\n    apiVersion: builtin\n    kind: NamespaceTransformer\n" +
		"    metadata: {name: operator-namespace, namespace: " + ns + "}\n    setRoleBindingSubjects: allServiceAccounts\n"
	Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600)).To(Succeed())
	return dir
}

// access is one `kubectl auth can-i` question: verb, resource (resource.group or
// resource/subresource) and namespace ("" for all namespaces or a cluster-scoped resource).
type access struct {
	verb, resource, namespace string
}

func (a access) String() string {
	s := a.verb + " " + a.resource
	if a.namespace != "" {
		s += " -n " + a.namespace
	}
	return s
}

// canI asks the API server whether the ServiceAccount sa of namespace ns may do a.
func canI(ctx context.Context, ns, sa string, a access) bool {
	resource, sub, _ := strings.Cut(a.resource, "/")
	resource, group, _ := strings.Cut(resource, ".")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   "system:serviceaccount:" + ns + ":" + sa,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: group, Resource: resource, Subresource: sub, Namespace: a.namespace,
		},
	}}
	Expect(k8s.Create(ctx, sar)).To(Succeed())
	return sar.Status.Allowed
}

// expectRights checks every question of allowed and denied for the ServiceAccount.
func expectRights(ctx context.Context, ns, sa string, allowed, denied []access) {
	for _, a := range allowed {
		Expect(canI(ctx, ns, sa, a)).To(BeTrue(), "%s may %s", sa, a)
	}
	for _, a := range denied {
		Expect(canI(ctx, ns, sa, a)).To(BeFalse(), "%s may not %s", sa, a)
	}
}
