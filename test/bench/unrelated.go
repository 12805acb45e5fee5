package bench

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateUnrelated creates n objects the operator has no business with in namespace ns: half
// ConfigMaps, half Secrets, each with 1 KiB of data and none of the operator's labels. A
// controller whose caches hold them grows with them.
func CreateUnrelated(ctx context.Context, c client.Client, ns string, n, goroutines int) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return err
	}
	payload := strings.Repeat("x", 1024)
	return ForEach(ctx, n, goroutines, func(ctx context.Context, i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i), Namespace: ns,
			Labels: map[string]string{"app": "unrelated"}}
		var obj client.Object = &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": payload}}
		if i%2 == 1 {
			obj = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"data": []byte(payload)}}
		}
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %s: %w", meta.Name, err)
		}
		return nil
	})
}
