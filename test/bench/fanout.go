package bench

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
)

// StorageClass is the WaitForFirstConsumer class the fan-out benchmarks' clusters use.
const StorageClass = "bench-wffc"

// CreateStorageClass creates StorageClass (no provisioner runs on envtest: claims stay
// Pending, which a WaitForFirstConsumer class reports as VolumeReady=True).
func CreateStorageClass(ctx context.Context, c client.Client) error {
	return c.Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: StorageClass},
		Provisioner:       "bench.valkey.io/none",
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer),
	})
}

// NewCluster is a ValkeyCluster of shards × (1 + replicas) nodes with persistence on
// StorageClass.
func NewCluster(ns, name string, shards, replicas int32) *valkeyv1.ValkeyCluster {
	return &valkeyv1.ValkeyCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: valkeyv1.ValkeyClusterSpec{
			Shards: shards, Replicas: replicas,
			ServerSpec: valkeyv1.ServerSpec{
				Image: "valkey.local/valkey:dev",
				Persistence: &valkeyv1.PersistenceSpec{
					Size: resource.MustParse("1Gi"), StorageClassName: ptr.To(StorageClass),
				},
			},
		},
	}
}

// FanOutDone tells whether every one of the cluster's nodes exists with its claim,
// ConfigMap and StatefulSet, and reports VolumeReady=True; when not, it says what is missing.
func FanOutDone(ctx context.Context, c client.Client, vc *valkeyv1.ValkeyCluster) (bool, string, error) {
	want := int(vc.Spec.Shards * (1 + vc.Spec.Replicas))
	return fannedOut(ctx, c, want, client.InNamespace(vc.Namespace), client.MatchingLabels{valkeyv1.LabelCluster: vc.Name})
}

// NamespaceFannedOut is FanOutDone for every cluster of namespace ns together: nodes
// ValkeyNodes in all.
func NamespaceFannedOut(ctx context.Context, c client.Client, ns string, nodes int) (bool, string, error) {
	return fannedOut(ctx, c, nodes, client.InNamespace(ns), client.HasLabels{valkeyv1.LabelCluster})
}

// fannedOut tells whether want ValkeyNodes selected by sel exist with their claims,
// ConfigMaps and StatefulSets, and report VolumeReady=True. The other objects are counted
// first, from their metadata: the nodes, whole, are listed only once those are all there.
func fannedOut(ctx context.Context, c client.Client, want int, sel ...client.ListOption) (bool, string, error) {
	for _, gvk := range []schema.GroupVersionKind{
		appsv1.SchemeGroupVersion.WithKind("StatefulSetList"),
		corev1.SchemeGroupVersion.WithKind("ConfigMapList"),
		corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"),
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(ctx, list, sel...); err != nil {
			return false, "", err
		}
		if len(list.Items) < want {
			return false, fmt.Sprintf("%d/%d %s", len(list.Items), want, gvk.Kind), nil
		}
	}
	var nodes valkeyv1.ValkeyNodeList
	if err := c.List(ctx, &nodes, sel...); err != nil {
		return false, "", err
	}
	ready := 0
	for i := range nodes.Items {
		if status.IsTrue(nodes.Items[i].Status.Conditions, valkeyv1.ConditionVolumeReady) {
			ready++
		}
	}
	if len(nodes.Items) < want || ready < want {
		return false, fmt.Sprintf("%d/%d ValkeyNodes, %d VolumeReady", len(nodes.Items), want, ready), nil
	}
	return true, "", nil
}

// WaitFanOut polls FanOutDone every second until it is done or timeout passes, and returns
// the time from start to the first poll that found it done.
func WaitFanOut(ctx context.Context, c client.Client, vc *valkeyv1.ValkeyCluster, start time.Time, timeout time.Duration) (time.Duration, error) {
	return WaitDone(ctx, "fan-out of "+vc.Name, func() (bool, string, error) { return FanOutDone(ctx, c, vc) }, start, timeout)
}

// WaitDone polls done every second until it reports done or timeout passes, and returns the
// time from start to the first poll that found it done; what names the wait in errors.
func WaitDone(ctx context.Context, what string, done func() (bool, string, error), start time.Time, timeout time.Duration) (time.Duration, error) {
	for {
		ok, missing, err := done()
		if err != nil {
			return 0, err
		}
		if ok {
			return time.Since(start), nil
		}
		if time.Since(start) > timeout {
			return 0, fmt.Errorf("%s not done within %s: %s", what, timeout, missing)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
