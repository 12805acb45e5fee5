package round

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretReader reads Secrets past the cache (the topology controller may get Secrets, not
// list or watch them), each at most once in a reconcile whose context carries a memo
// (WithSecretMemo): the password, operator, ACL, user and TLS Secrets a round needs are read
// by several concerns, and the second read of a Secret in a round costs no API request.
// Without list and watch rights a Secret changed between rounds cannot be told from one
// that did not, so each round reads them again. Other objects, and a context without a memo,
// are read from the Reader as they are.
type SecretReader struct {
	client.Reader
}

// secretMemo is what a reconcile read of each Secret: the Secret, or that it does not exist.
type secretMemo struct {
	mu  sync.Mutex
	got map[client.ObjectKey]*corev1.Secret // nil: not found
}

type secretMemoKey struct{}

// WithSecretMemo returns ctx carrying an empty memo of Secret reads: one reconcile's.
func WithSecretMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, secretMemoKey{}, &secretMemo{got: map[client.ObjectKey]*corev1.Secret{}})
}

func memoIn(ctx context.Context) *secretMemo {
	m, _ := ctx.Value(secretMemoKey{}).(*secretMemo)
	return m
}

// Get reads a Secret once per reconcile (see SecretReader); only a Secret or its absence is
// remembered, never another error.
func (r SecretReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, isSecret := obj.(*corev1.Secret)
	m := memoIn(ctx)
	if !isSecret || m == nil {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if got, read := m.got[key]; read {
		if got == nil {
			return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
		}
		got.DeepCopyInto(s)
		return nil
	}
	err := r.Reader.Get(ctx, key, s, opts...)
	switch {
	case err == nil:
		m.got[key] = s.DeepCopy()
	case apierrors.IsNotFound(err):
		m.got[key] = nil
	}
	return err
}

// SecretWriting drops what the reconcile of ctx read of the Secret key, before it writes it:
// whether the write succeeds or not, the next read asks the API server.
func SecretWriting(ctx context.Context, key client.ObjectKey) {
	if m := memoIn(ctx); m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.got, key)
	}
}

// SecretWritten records s as the reconcile of ctx wrote it: later reads in the reconcile
// get it without a request.
func SecretWritten(ctx context.Context, s *corev1.Secret) {
	if m := memoIn(ctx); m != nil {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.got[client.ObjectKeyFromObject(s)] = s.DeepCopy()
	}
}
