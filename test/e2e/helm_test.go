package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// helmRelease is the release name the Helm specs install the operator under.
const helmRelease = "valkey-operator"

// helm runs the Helm binary `make` built (HELM) against the local cluster.
func helm(args ...string) (string, error) {
	out, err := exec.Command(os.Getenv("HELM"), append(args, "--kubeconfig", kubeconfig)...).CombinedOutput()
	return string(out), err
}

// helmInstall runs `helm install` or `helm upgrade` (verb) of chart with the local cluster's
// images at tag and three topology controllers, as deploy/local, and waits for the controllers.
func helmInstall(verb, chart, tag string, extra ...string) {
	args := []string{verb, helmRelease, chart, "-n", operatorNamespace, "--wait", "--timeout", "5m",
		"--set", "topologyController.replicas=3"}
	for _, c := range []string{"volume", "workload", "topology"} {
		args = append(args, "--set", c+"Controller.image.repository=valkey.local/"+c+"-controller", "--set", c+"Controller.image.tag="+tag)
	}
	out, err := helm(append(args, extra...)...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "helm %s: %s", verb, out)
}

// removeManifest deletes what a rendered deploy/local installed but its CRDs and Namespace:
// the controllers, their RBAC and Leases' roles, so that Helm can install its own.
func removeManifest(path string) {
	raw, err := os.ReadFile(path)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var keep []string
	for _, doc := range strings.Split("\n"+string(raw), "\n---") {
		var o struct {
			Kind string `json:"kind"`
		}
		ExpectWithOffset(1, yaml.Unmarshal([]byte(doc), &o)).To(Succeed())
		if o.Kind != "" && o.Kind != "CustomResourceDefinition" && o.Kind != "Namespace" {
			keep = append(keep, doc)
		}
	}
	file := filepath.Join(GinkgoT().TempDir(), "controllers.yaml")
	ExpectWithOffset(1, os.WriteFile(file, []byte(strings.Join(keep, "\n---")), 0o600)).To(Succeed())
	out, err := kubectl("delete", "--ignore-not-found", "--wait", "-f", file)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
}

// crdAnnotation is an annotation of a CRD.
func crdAnnotation(crd, key string) string {
	out, err := kubectl("get", "crd", crd, "-o", "jsonpath={.metadata.annotations."+strings.ReplaceAll(key, ".", `\.`)+"}")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	return strings.TrimSpace(out)
}

// crdSchema is a CRD's served schema, as JSON.
func crdSchema(crd string) string {
	out, err := kubectl("get", "crd", crd, "-o", "jsonpath={.spec.versions[0].schema}")
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), out)
	return out
}

// repoRoot is the repository's top folder (this file is in test/e2e).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
