package helm

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	release           = "valkey-operator"
	operatorNamespace = "valkey-system"
	sampleNamespace   = "helm-e2e"
	sampleName        = "my-cluster"
)

// kube runs kubectl against the local cluster (E2E_KUBECONFIG) and returns its combined output.
func kube(kubeconfig string, args ...string) (string, error) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// Installing the operator with Helm, as a user would: `helm install` (taking over the CRDs a
// kustomize install left) brings the three controllers up and the sample to Ready; `helm
// upgrade` with a changed value rolls a controller and no Valkey pod, and leaves the CRDs the
// release's; `helm uninstall` removes the controllers and their RBAC and leaves what
// docs/install.md says it leaves: the CRDs, the ValkeyClusters and their running pods, and the
// claims. The operator installed again takes the cluster over, and a deleted cluster's
// retained claims outlive a second uninstall.
func TestHelmInstall(t *testing.T) {
	kc := os.Getenv("E2E_KUBECONFIG")
	if kc == "" {
		t.Skip("E2E_KUBECONFIG is not set: the Helm install runs against the local cluster (make e2e-helm)")
	}
	h := &harness{t: t, kc: kc, helm: helmBinary(t)}
	h.removeKustomizeInstall()
	t.Cleanup(h.cleanup)

	h.install("--take-ownership") // the CRDs of the kustomize install become the release's
	h.must("create", "namespace", sampleNamespace)
	h.must("-n", sampleNamespace, "apply", "-f", filepath.Join(repoRoot(t), "deploy", "samples", "valkeycluster-local.yaml"))
	start := time.Now()
	h.must("-n", sampleNamespace, "wait", "--for=condition=Ready", "--timeout=10m", "valkeycluster/"+sampleName)
	t.Logf("sample Ready %.0f s after it was applied", time.Since(start).Seconds())
	claims := h.claims()
	if len(claims) != 6 {
		t.Fatalf("the sample (3 × 1) should hold 6 claims, has %v", claims)
	}
	h.upgradeRollsNoValkeyPod()

	h.uninstall()
	h.expectNoChartObjects()
	h.expectExists("crd", "valkeyclusters.valkey.io", "the CRDs stay (helm.sh/resource-policy: keep)")
	h.expectExists("-n", sampleNamespace, "valkeycluster", sampleName, "the ValkeyCluster stays")
	if got := h.claims(); len(got) != len(claims) {
		t.Fatalf("claims after uninstall: %v, want %v", got, claims)
	}
	if ready := h.readyPods(); ready != 6 {
		t.Fatalf("after uninstall %d of the sample's 6 pods are Ready: the servers should run on unmanaged", ready)
	}

	h.install() // the kept CRDs carry the release's name: adopted without --take-ownership
	h.must("-n", sampleNamespace, "wait", "--for=condition=Ready", "--timeout=5m", "valkeycluster/"+sampleName)
	h.must("-n", sampleNamespace, "delete", "valkeycluster", sampleName, "--timeout=5m")
	h.must("-n", sampleNamespace, "wait", "--for=delete", "--timeout=5m", "valkeynode", "--all")
	h.uninstall()
	if got := h.claims(); len(got) != len(claims) {
		t.Fatalf("retained claims after the cluster's deletion and a second uninstall: %v, want %v", got, claims)
	}
	t.Logf("after uninstall: the CRDs and %d retained claims, as documented", len(claims))
}

type harness struct {
	t        *testing.T
	kc, helm string
}

func (h *harness) must(args ...string) string {
	h.t.Helper()
	out, err := kube(h.kc, args...)
	if err != nil {
		h.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (h *harness) helmRun(args ...string) (string, error) {
	cmd := exec.Command(h.helm, append(args, "--kubeconfig", h.kc)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// removeKustomizeInstall deletes the controllers a kustomize install left (make run-local,
// make e2e), but not the CRDs nor the namespace: Helm refuses to adopt objects it did not make.
func (h *harness) removeKustomizeInstall() {
	h.t.Helper()
	_, _ = h.helmRun("uninstall", release, "-n", operatorNamespace, "--wait") // a failed earlier run
	var keep []string
	for _, o := range kustomize(h.t, "local") {
		if o["kind"] == "CustomResourceDefinition" || o["kind"] == "Namespace" {
			continue
		}
		meta := o["metadata"].(map[string]any)
		args := []string{"delete", "--ignore-not-found", "--wait", fmt.Sprint(o["kind"]), fmt.Sprint(meta["name"])}
		if ns, ok := meta["namespace"]; ok {
			args = append(args, "-n", fmt.Sprint(ns))
		}
		h.must(args...)
		keep = append(keep, fmt.Sprint(meta["name"]))
	}
	h.t.Logf("removed the kustomize install's controllers and RBAC (%d objects), kept the CRDs", len(keep))
}

// install runs helm install with this tree's chart and the local cluster's images.
func (h *harness) install(extra ...string) {
	h.t.Helper()
	args := append([]string{"install", release, chartDir(h.t), "-n", operatorNamespace, "--create-namespace", "--wait", "--timeout", "3m"}, extra...)
	for _, s := range localValues {
		args = append(args, "--set", s)
	}
	start := time.Now()
	if out, err := h.helmRun(args...); err != nil {
		h.t.Fatalf("helm install: %v\n%s", err, out)
	}
	h.t.Logf("helm install: the three controllers available in %.0f s", time.Since(start).Seconds())
}

// upgradeRollsNoValkeyPod runs helm upgrade with one more flag for the volume controller: its
// Deployment rolls, the sample's pods do not, and the CRDs stay the release's.
func (h *harness) upgradeRollsNoValkeyPod() {
	h.t.Helper()
	pods := h.podUIDs()
	args := []string{"upgrade", release, chartDir(h.t), "-n", operatorNamespace, "--reuse-values", "--wait", "--timeout", "3m",
		"--set", "volumeController.extraArgs={--usage-interval=15s}"}
	start := time.Now()
	if out, err := h.helmRun(args...); err != nil {
		h.t.Fatalf("helm upgrade: %v\n%s", err, out)
	}
	h.t.Logf("helm upgrade: the controllers available again in %.0f s", time.Since(start).Seconds())
	if got := h.must("-n", operatorNamespace, "get", "deployment", "valkey-volume-controller", "-o", "jsonpath={.spec.template.spec.containers[0].args}"); !strings.Contains(got, "--usage-interval=15s") {
		h.t.Fatalf("after helm upgrade the volume controller runs with %s", got)
	}
	if got := h.must("get", "crd", "valkeyclusters.valkey.io", "-o", `jsonpath={.metadata.annotations.meta\.helm\.sh/release-name}`); got != release {
		h.t.Fatalf("after helm upgrade the CRD belongs to release %q, want %q", got, release)
	}
	h.must("-n", sampleNamespace, "wait", "--for=condition=Ready", "--timeout=5m", "valkeycluster/"+sampleName)
	if got := h.podUIDs(); got != pods {
		h.t.Fatalf("helm upgrade of the controllers replaced Valkey pods:\nbefore %s\nafter  %s", pods, got)
	}
}

// podUIDs lists the sample namespace's pods as name=uid.
func (h *harness) podUIDs() string {
	h.t.Helper()
	return h.must("-n", sampleNamespace, "get", "pods", "-o", `jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{" "}{end}`)
}

func (h *harness) uninstall() {
	h.t.Helper()
	if out, err := h.helmRun("uninstall", release, "-n", operatorNamespace, "--wait"); err != nil {
		h.t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
}

// expectNoChartObjects checks that none of the chart's Deployments, ServiceAccounts, roles and
// bindings is left.
func (h *harness) expectNoChartObjects() {
	h.t.Helper()
	for _, c := range []string{"volume", "workload", "topology"} {
		name := "valkey-" + c + "-controller"
		for _, obj := range [][]string{
			{"-n", operatorNamespace, "deployment", name}, {"-n", operatorNamespace, "serviceaccount", name},
			{"-n", operatorNamespace, "role", name + "-leader-election"}, {"-n", operatorNamespace, "rolebinding", name + "-leader-election"},
			{"clusterrole", name}, {"clusterrolebinding", name},
		} {
			out, err := kube(h.kc, append([]string{"get", "--ignore-not-found", "-o", "name"}, obj...)...)
			if err != nil || out != "" {
				h.t.Errorf("after helm uninstall, %v is still there (%v): %s", obj, err, out)
			}
		}
	}
}

func (h *harness) expectExists(args ...string) {
	h.t.Helper()
	why := args[len(args)-1]
	if out, err := kube(h.kc, append([]string{"get"}, args[:len(args)-1]...)...); err != nil {
		h.t.Fatalf("%s: %v\n%s", why, err, out)
	}
}

// claims lists the sample namespace's claims as name=phase.
func (h *harness) claims() []string {
	h.t.Helper()
	out := h.must("-n", sampleNamespace, "get", "pvc", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.phase}{"\n"}{end}`)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// readyPods counts the sample namespace's pods whose Ready condition is True.
func (h *harness) readyPods() int {
	h.t.Helper()
	out := h.must("-n", sampleNamespace, "get", "pods", "-o", `jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`)
	return strings.Count(out+"\n", "True\n")
}

// cleanup removes what the test made: the release, the sample (its finalizers need the
// operator, so it is installed again when needed) and the retained claims.
func (h *harness) cleanup() {
	if out, _ := kube(h.kc, "-n", sampleNamespace, "get", "valkeynode", "-o", "name"); out != "" {
		if _, err := h.helmRun("status", release, "-n", operatorNamespace); err != nil {
			h.install()
		}
		_, _ = kube(h.kc, "-n", sampleNamespace, "delete", "valkeycluster", "--all", "--timeout=5m")
		_, _ = kube(h.kc, "-n", sampleNamespace, "wait", "--for=delete", "--timeout=5m", "valkeynode", "--all")
	}
	_, _ = h.helmRun("uninstall", release, "-n", operatorNamespace, "--wait")
	_, _ = kube(h.kc, "delete", "namespace", sampleNamespace, "--ignore-not-found", "--timeout=5m")
}
