package threecontrollers_test

import (
	"context"
	"errors"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

var errNoServer = errors.New("no server runs")

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func objectMeta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }

// clusterCondition is the status of the cluster's condition t ("" while it has none).
func clusterCondition(name, t string) func() string {
	return func() string {
		var vc valkeyv1.ValkeyCluster
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &vc); err != nil {
			return err.Error()
		}
		if c := status.Get(vc.Status.Conditions, t); c != nil {
			return string(c.Status)
		}
		return ""
	}
}

// listNodes are the ValkeyNodes of the suite's namespace.
func listNodes() []valkeyv1.ValkeyNode {
	GinkgoHelper()
	var list valkeyv1.ValkeyNodeList
	Expect(k8s.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// nodesWithRole names the nodes whose topology status reports role.
func nodesWithRole(role valkeyv1.Role) []string {
	GinkgoHelper()
	var out []string
	for _, n := range listNodes() {
		if n.Status.Topology != nil && n.Status.Topology.Role == role {
			out = append(out, n.Name)
		}
	}
	return out
}

// nodesWith names the nodes whose condition t has the given status.
func nodesWith(t, want string) []string {
	GinkgoHelper()
	var out []string
	for _, n := range listNodes() {
		if c := status.Get(n.Status.Conditions, t); c != nil && string(c.Status) == want {
			out = append(out, n.Name)
		}
	}
	return out
}

// patchCluster merge-patches the cluster's spec.
func patchCluster(name, patch string) {
	GinkgoHelper()
	Expect(k8s.Patch(context.Background(), &valkeyv1.ValkeyCluster{ObjectMeta: objectMeta(name)},
		client.RawPatch(types.MergePatchType, []byte(patch)))).To(Succeed())
}
