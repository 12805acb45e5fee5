package bench

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// watchedBy are, per controller, the kinds it watches that a fan-out writes (each
// controller's setup also watches kinds a fan-out on envtest leaves alone, such as Pods and
// StorageClasses, left out here): every controller watches every ValkeyNode. The
// controllers' own caches also narrow some kinds by label and slim them; these caches only
// drop managed fields, so they decode a little more than the controllers do.
var watchedBy = map[string][]client.Object{
	"volume-controller":   {&valkeyv1.ValkeyNode{}, &corev1.PersistentVolumeClaim{}},
	"workload-controller": {&valkeyv1.ValkeyNode{}, &corev1.ConfigMap{}, &appsv1.StatefulSet{}},
	"topology-controller": {&valkeyv1.ValkeyNode{}, &valkeyv1.ValkeyCluster{}},
}

// StartWatchers opens, on cfg, the watches the three controllers hold (one cache per
// controller, as three processes would), so that a bare run beside them pays what serving,
// sending and decoding those watches costs and nothing of the controllers' own work. The
// returned stop ends them.
func StartWatchers(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	for name, kinds := range watchedBy {
		c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultTransform: cache.TransformStripManagedFields()})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("cache of %s: %w", name, err)
		}
		for _, obj := range kinds {
			if _, err := c.GetInformer(ctx, obj); err != nil {
				cancel()
				return nil, fmt.Errorf("%s's watch of %T: %w", name, obj, err)
			}
		}
		go func() { _ = c.Start(ctx) }()
		if !c.WaitForCacheSync(ctx) {
			cancel()
			return nil, fmt.Errorf("%s's watches did not sync", name)
		}
	}
	return cancel, nil
}
