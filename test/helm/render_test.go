package helm

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// object is one rendered manifest, as the API server would read it.
type object map[string]any

// key names an object: kind, namespace and name.
func (o object) key() string {
	meta, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v %v/%v", o["kind"], meta["namespace"], meta["name"])
}

// repoRoot is the repository's top folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// chartDir is the chart's folder.
func chartDir(t *testing.T) string {
	t.Helper()
	return filepath.Join(repoRoot(t), "deploy", "helm", "valkey-operator")
}

// helmBinary is the Helm that make builds (HELM), else helm on PATH.
func helmBinary(t *testing.T) string {
	t.Helper()
	if h := os.Getenv("HELM"); h != "" {
		if _, err := os.Stat(h); err == nil {
			return h
		}
	}
	h, err := exec.LookPath("helm")
	if err != nil {
		t.Fatalf("no Helm: HELM=%q is not a file and helm is not on PATH (make helm builds it; make test sets HELM)", os.Getenv("HELM"))
	}
	return h
}

// run runs a command and returns its standard output, failing the test with its error output.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// helmTemplate renders the chart into namespace with the given --set values.
func helmTemplate(t *testing.T, namespace string, sets ...string) []object {
	t.Helper()
	args := []string{"template", "valkey-operator", chartDir(t), "-n", namespace}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return parse(t, run(t, helmBinary(t), args...))
}

// kustomize builds a folder of deploy/ with kubectl's kustomize.
func kustomize(t *testing.T, dir string) []object {
	t.Helper()
	return parse(t, run(t, "kubectl", "kustomize", filepath.Join(repoRoot(t), "deploy", dir)))
}

// parse splits a multi-document YAML stream into objects, skipping empty documents.
func parse(t *testing.T, stream []byte) []object {
	t.Helper()
	var out []object
	for _, doc := range strings.Split("\n"+string(stream), "\n---") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("parse %q: %v", doc, err)
		}
		if len(o) > 0 {
			out = append(out, o)
		}
	}
	return out
}

// helmLabels are the labels the chart adds to every object for Helm's own bookkeeping.
var helmLabels = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"}

// helmAnnotations are the annotations the chart adds for Helm's own bookkeeping: the CRDs are
// kept by helm uninstall.
var helmAnnotations = []string{"helm.sh/resource-policy"}

// withoutHelmLabels returns the objects by key, with Helm's bookkeeping labels and annotations
// removed (and a map left empty by that removal dropped).
func withoutHelmLabels(objs []object) map[string]object {
	out := map[string]object{}
	for _, o := range objs {
		if meta, ok := o["metadata"].(map[string]any); ok {
			withoutKeys(meta, "labels", helmLabels)
			withoutKeys(meta, "annotations", helmAnnotations)
		}
		out[o.key()] = o
	}
	return out
}

// withoutKeys deletes keys from the map meta[field], and the map itself once empty.
func withoutKeys(meta map[string]any, field string, keys []string) {
	m, ok := meta[field].(map[string]any)
	if !ok {
		return
	}
	for _, k := range keys {
		delete(m, k)
	}
	if len(m) == 0 {
		delete(meta, field)
	}
}

// diff lists what differs between two sets of objects: missing, extra and changed objects,
// each changed one with both renderings.
func diff(want, got map[string]object) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			out = append(out, "missing from the chart: "+k)
			continue
		}
		wy, _ := yaml.Marshal(w)
		gy, _ := yaml.Marshal(g)
		if !bytes.Equal(wy, gy) {
			out = append(out, fmt.Sprintf("%s differs:\n--- kustomize\n%s\n--- helm\n%s", k, wy, gy))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "only in the chart: "+k)
		}
	}
	sort.Strings(out)
	return out
}
