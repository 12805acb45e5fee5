// Package readme keeps the README's commands working on a fresh machine: each `make` command
// the README gives is dry-run (make -n) with an empty cache and no local cluster, and every
// step that uses a tool or the local cluster must come after the step that makes it. A
// target that relies on a step the user ran before (as `make valkey` once was for
// `make run-local`) fails here, naming the step it lacks.
package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// need says that a line matching user may only run after a line matching producer.
type need struct {
	what           string
	user, producer *regexp.Regexp
}

var needs = []need{
	{"valkey-server (make valkey)", regexp.MustCompile(`test/images/build\.sh|hack/test\.sh|go test \./topologycontroller`), regexp.MustCompile(`test/valkeyserver/install\.sh`)},
	{"etcd and kube-apiserver for envtest (make envtest-bins)", regexp.MustCompile(`hack/test\.sh|go test \./test/bench/apiserver|go test \./topologycontroller`), regexp.MustCompile(`test/k8sbuild/build\.sh .*(etcd kube-apiserver|kube-apiserver)`)},
	{"Helm (make helm)", regexp.MustCompile(`hack/test\.sh|tools/helm-v[0-9.]+ (lint|template)|go test \./test/helm`), regexp.MustCompile(`go install helm\.sh/helm`)},
	{"golangci-lint", regexp.MustCompile(`golangci-lint-v[0-9.]+ run`), regexp.MustCompile(`go install github\.com/golangci/golangci-lint`)},
	{"the Kubernetes components (make k8s-bins)", regexp.MustCompile(`cluster\.sh up`), regexp.MustCompile(`test/k8sbuild/build\.sh .*kubelet`)},
	{"the snapshot-controller (make snapshotter)", regexp.MustCompile(`cluster\.sh up`), regexp.MustCompile(`build-snapshotter\.sh`)},
	{"the images (make images)", regexp.MustCompile(`cluster\.sh up`), regexp.MustCompile(`test/images/build\.sh all`)},
	{"the Debian packages (make host-packages: redis-cli for the image, containerd...)", regexp.MustCompile(`test/images/build\.sh|cluster\.sh up`), regexp.MustCompile(`cluster\.sh packages`)},
	{"the DNS and NetworkPolicy builds", regexp.MustCompile(`test/images/build\.sh all`), regexp.MustCompile(`build-coredns\.sh`)},
	{"the local cluster (make cluster-up)", regexp.MustCompile(`go test \./test/(e2e|smoke|storage|helm|bench/localcluster)|KUBECONFIG=\S*admin\.kubeconfig`), regexp.MustCompile(`cluster\.sh up`)},
}

// readmeTargets are the make targets the README tells a user to run, in its order.
func readmeTargets(t *testing.T, root string) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range regexp.MustCompile("(?m)(?:^|`)make ([a-z][a-z0-9-]*)").FindAllStringSubmatch(string(text), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// dryRun prints the commands `make -n target` would run on a machine with an empty cache and
// no local cluster, with none of the tool paths a calling make exports.
func dryRun(t *testing.T, root, target string) []string {
	t.Helper()
	empty := t.TempDir()
	cmd := exec.Command("make", "-n", "--no-print-directory", target,
		"CACHE="+filepath.Join(empty, "cache"), "LOCAL_CLUSTER_DIR="+filepath.Join(empty, "cluster"))
	cmd.Dir = root
	// make -n still runs a recipe line that names $(MAKE): a go found there fails the dry
	// run instead of running a suite for real.
	shim := filepath.Join(empty, "bin")
	if err := os.MkdirAll(shim, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := "#!/bin/sh\necho \"make -n ran go $*: a recipe line naming \\$(MAKE) runs even in a dry run\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(shim, "go"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env, "PATH="+shim+string(os.PathListSeparator)+os.Getenv("PATH"))
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "KUBEBUILDER_ASSETS", "VALKEY_SERVER", "HELM", "COREDNS", "KUBE_NETWORK_POLICIES",
			"SNAPSHOT_CONTROLLER", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "CACHE", "E2E_KUBECONFIG",
			"E2E_DEPLOYED", "KUBECONFIG", "LOCAL_CLUSTER_DIR", "PATH":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s", target, err, out)
	}
	return strings.Split(string(out), "\n")
}

// Each README command, run alone from a clean clone with empty caches, builds what it uses
// before it uses it.
func TestReadmeCommandsNeedNoEarlierStep(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	targets := readmeTargets(t, root)
	for _, want := range []string{"run-local", "test"} {
		if !contains(targets, want) {
			t.Fatalf("the README no longer names make %s (found %v)", want, targets)
		}
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			lines := dryRun(t, root, target)
			var problems []string
			for _, n := range needs {
				if p := check(lines, n); p != "" {
					problems = append(problems, p)
				}
			}
			sort.Strings(problems)
			if len(problems) > 0 {
				t.Fatalf("make %s on a fresh machine:\n%s", target, strings.Join(problems, "\n"))
			}
		})
	}
}

// check returns what is wrong with lines for n: a user line with no producer line before it.
func check(lines []string, n need) string {
	produced := false
	for _, l := range lines {
		if strings.Contains(l, "get --raw /readyz") {
			continue // the check whether the local cluster is up, not a use of it
		}
		if n.producer.MatchString(l) {
			produced = true
		}
		if n.user.MatchString(l) && !n.producer.MatchString(l) && !produced {
			return "  " + n.what + " is used before it is made: " + strings.TrimSpace(l)
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
