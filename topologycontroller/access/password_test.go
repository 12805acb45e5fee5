package access

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/test/envtest"
)

// countingReader counts the Secret GETs sent to the API server.
type countingReader struct {
	client.Reader
	mu      sync.Mutex
	secrets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*corev1.Secret); ok {
		c.mu.Lock()
		c.secrets++
		c.mu.Unlock()
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c *countingReader) take() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.secrets
	c.secrets = 0
	return n
}

// eventLog keeps the reasons of the events recorded.
type eventLog struct {
	recorder.EventRecorder
	reasons []string
}

func (e *eventLog) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, _ string, _ ...any) {
	e.reasons = append(e.reasons, reason)
}

// Each reconcile reads the password Secret from the API server once: when the generated
// Secret is created, when it exists, and for a Secret named in spec.passwordSecret.
func TestPasswordSecretReadOncePerReconcile(t *testing.T) {
	env, err := envtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	c, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "password-"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	reader := &countingReader{Reader: c}
	events := &eventLog{}
	k := &Keeper{Client: c, APIReader: reader, Recorder: events}

	vc := &valkeyv1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: ns.Name}, Spec: valkeyv1.ValkeyClusterSpec{Shards: 1, Replicas: 1}}
	if err := c.Create(ctx, vc); err != nil {
		t.Fatal(err)
	}
	first := readPassword(t, k, vc)
	if n := reader.take(); n != 1 {
		t.Errorf("creating the generated Secret: %d Secret GETs, want 1", n)
	}
	if len(events.reasons) != 1 || events.reasons[0] != valkeyv1.EventPasswordGenerated {
		t.Errorf("events %v, want one %s", events.reasons, valkeyv1.EventPasswordGenerated)
	}
	if again := readPassword(t, k, vc); again != first {
		t.Errorf("second reconcile read %q, want the generated %q", again, first)
	}
	if n := reader.take(); n != 1 {
		t.Errorf("an existing generated Secret: %d Secret GETs, want 1", n)
	}

	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns.Name}, Data: map[string][]byte{"pw": []byte("s3cret")}}
	if err := c.Create(ctx, user); err != nil {
		t.Fatal(err)
	}
	vc.Spec.PasswordSecret = &valkeyv1.SecretKeyRef{Name: "mine", Key: "pw"}
	if got := readPassword(t, k, vc); got != "s3cret" {
		t.Errorf("spec.passwordSecret: read %q, want s3cret", got)
	}
	if n := reader.take(); n != 1 {
		t.Errorf("spec.passwordSecret: %d Secret GETs, want 1", n)
	}
}

func readPassword(t *testing.T, k *Keeper, vc *valkeyv1.ValkeyCluster) string {
	t.Helper()
	_, pw, err := k.ClusterPassword(context.Background(), vc)
	if err != nil {
		t.Fatal(err)
	}
	if pw == "" {
		t.Fatal("empty password")
	}
	return pw
}
