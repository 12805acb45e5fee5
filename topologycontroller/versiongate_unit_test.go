package topologycontroller

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// TestVersionHoldImages checks what the version gate decides of each kind of spec.image on
// a cluster whose servers run Valkey 9.1.2 from valkey/valkey:9.1.2: an image that names an
// older major, by its major alone too, is a downgrade; one whose version cannot be told (no
// tag, a digest alone, latest) is held as one might be; the acknowledgement lets either
// through; and nothing is held while no server reports a version or the image is the one
// the nodes have.
func TestVersionHoldImages(t *testing.T) {
	node := func(image, version string) *valkeyv1.ValkeyNode {
		n := &valkeyv1.ValkeyNode{ObjectMeta: metav1.ObjectMeta{Name: "c-0-0"}}
		n.Spec.Image = image
		if version != "" {
			n.Status.Topology = &valkeyv1.TopologyStatus{ServerVersion: version}
		}
		return n
	}
	running := []*valkeyv1.ValkeyNode{node("valkey/valkey:9.1.2", "9.1.2")}
	for _, tc := range []struct {
		image   string
		nodes   []*valkeyv1.ValkeyNode
		allow   bool
		config  map[string]string
		reason  string
		message string
	}{
		{image: "valkey/valkey:8.1.8", nodes: running, reason: valkeyv1.ReasonDowngradeRefused},
		{image: "valkey/valkey:8", nodes: running, reason: valkeyv1.ReasonDowngradeRefused, message: "spec.image valkey/valkey:8 is Valkey 8, an older major"},
		{image: "valkey/valkey:8-alpine", nodes: running, reason: valkeyv1.ReasonDowngradeRefused},
		{image: "valkey/valkey:8-alpine3.21", nodes: running, reason: valkeyv1.ReasonDowngradeRefused},
		{image: "valkey/valkey:8", nodes: running, allow: true},
		{image: "valkey/valkey:9", nodes: running},
		{image: "valkey/valkey:9-alpine3.21", nodes: running},
		{image: "valkey/valkey:10-alpine", nodes: running},
		{image: "valkey/valkey@sha256:0123abcd", nodes: running, reason: valkeyv1.ReasonVersionUnknown,
			message: "spec.image valkey/valkey@sha256:0123abcd names no version"},
		{image: "valkey/valkey:latest", nodes: running, reason: valkeyv1.ReasonVersionUnknown, message: valkeyv1.AnnotationAllowDowngrade + "=true"},
		{image: "registry:5000/valkey", nodes: running, reason: valkeyv1.ReasonVersionUnknown, message: "the 9.1.2 c-0-0 runs"},
		{image: "valkey/valkey@sha256:0123abcd", nodes: running, allow: true},
		{image: "valkey/valkey@sha256:0123abcd", nodes: []*valkeyv1.ValkeyNode{node("valkey/valkey:9.1.2", "")}},
		{image: "valkey/valkey@sha256:0123abcd"},
		{image: "valkey/valkey:latest", nodes: []*valkeyv1.ValkeyNode{node("valkey/valkey:latest", "9.1.2")}, config: map[string]string{"maxmemory": "1gb"}},
	} {
		vc := &valkeyv1.ValkeyCluster{}
		vc.Spec.Image, vc.Spec.Config = tc.image, tc.config
		if tc.allow {
			vc.Annotations = map[string]string{valkeyv1.AnnotationAllowDowngrade: "true"}
		}
		reason, msg := versionHold(vc, tc.nodes)
		if reason != tc.reason || !strings.Contains(msg, tc.message) {
			t.Errorf("%s on %d nodes (acknowledged %t): %q %q, want %q with %q", tc.image, len(tc.nodes), tc.allow, reason, msg, tc.reason, tc.message)
		}
	}
}
