package round

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// countingReader counts the Gets that reach the reader under it.
type countingReader struct {
	client.Reader
	gets int
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets++
	return c.Reader.Get(ctx, key, obj, opts...)
}

// A Secret, and a Secret's absence, are read once per memo; a write in between is what the
// next read gets; without a memo every read reaches the API.
func TestSecretReaderReadsEachSecretOncePerRound(t *testing.T) {
	pw := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-auth"}, Data: map[string][]byte{"password": []byte("one")}}
	api := fake.NewClientBuilder().WithObjects(pw).Build()
	counted := &countingReader{Reader: api}
	r := SecretReader{Reader: counted}
	ctx := WithSecretMemo(context.Background())
	key, missing := client.ObjectKeyFromObject(pw), client.ObjectKey{Namespace: "ns", Name: "c-acl"}

	for range 3 {
		var s corev1.Secret
		if err := r.Get(ctx, key, &s); err != nil || string(s.Data["password"]) != "one" {
			t.Fatalf("read %q, %v; want one", s.Data["password"], err)
		}
		s.Data["password"] = []byte("changed by a caller") // a caller's copy is its own
		if err := r.Get(ctx, missing, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("missing Secret: %v, want NotFound", err)
		}
	}
	if counted.gets != 2 {
		t.Fatalf("%d API reads for 2 Secrets read 3 times in a round, want 2", counted.gets)
	}

	// A write in the round: the memo holds what was written.
	created := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-acl"}, Data: map[string][]byte{"users.acl": []byte("user a")}}
	SecretWriting(ctx, missing)
	if err := api.Create(ctx, created); err != nil {
		t.Fatal(err)
	}
	SecretWritten(ctx, created)
	var s corev1.Secret
	if err := r.Get(ctx, missing, &s); err != nil || string(s.Data["users.acl"]) != "user a" {
		t.Fatalf("after the write: %q, %v", s.Data["users.acl"], err)
	}
	if counted.gets != 2 {
		t.Fatalf("the written Secret was read again from the API (%d reads)", counted.gets)
	}

	// The next round (a new memo), and a context without one, read again.
	next := WithSecretMemo(context.Background())
	if err := r.Get(next, key, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Get(context.Background(), key, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if counted.gets != 4 {
		t.Fatalf("%d API reads, want 4: a new round and a context without a memo read again", counted.gets)
	}
}
