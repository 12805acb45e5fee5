package workloadcontroller

import valkeyv1 "valkey.io/operator/apis/v1alpha1"

// desiredFor is buildDesired for the node as it runs now: a StatefulSet keeps the
// serviceName it was made with (see statefulSetServiceName), and announce: hostname is
// rendered only when the pod has its DNS name, so that a node never announces a name that
// does not resolve.
func desiredFor(node *valkeyv1.ValkeyNode, cur *current, opts Options) (*desired, error) {
	svc := statefulSetServiceName(node, cur)
	n := node
	if node.Spec.Announce == valkeyv1.AnnounceHostname && !hasDNSName(node, svc) {
		n = node.DeepCopy()
		n.Spec.Announce = ""
	}
	want, err := buildDesired(n, opts)
	if err != nil {
		return nil, err
	}
	want.serviceName = svc
	return want, nil
}

// statefulSetServiceName is the serviceName of the node's StatefulSet: the cluster's headless
// Service for a new one (its pod is then named under it), what an existing one has
// otherwise: the field is immutable, and a StatefulSet made before pods had DNS names keeps
// none.
func statefulSetServiceName(node *valkeyv1.ValkeyNode, cur *current) string {
	if w := cur.workloads[valkeyv1.WorkloadStatefulSet]; w != nil {
		return w.serviceName
	}
	return node.PodSubdomain()
}

// hasDNSName: the node's pod has its DNS name. A Deployment's pod takes its host name and
// subdomain from the template; a StatefulSet sets them from its own name and serviceName.
func hasDNSName(node *valkeyv1.ValkeyNode, serviceName string) bool {
	sub := node.PodSubdomain()
	if sub == "" {
		return false
	}
	return node.Spec.WorkloadType == valkeyv1.WorkloadDeployment || serviceName == sub
}
