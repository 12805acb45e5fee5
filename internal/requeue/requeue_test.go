package requeue

import (
	"context"
	"errors"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestSettle(t *testing.T) {
	claims := schema.GroupResource{Resource: "persistentvolumeclaims"}
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `persistentvolumeclaims "c" is forbidden: unable to create new content in namespace n because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause, Message: "n"}}},
	}}
	for _, tc := range []struct {
		name        string
		err         error
		wantErr     bool
		wantRequeue bool
	}{
		{"no error", nil, false, false},
		{"conflict, wrapped and joined", errors.Join(fmt.Errorf("add finalizer: %w", apierrors.NewConflict(claims, "c", errors.New("modified"))), nil), false, true},
		{"namespace being deleted, wrapped", fmt.Errorf("create claim c: %w", terminating), false, false},
		{"permission denied", fmt.Errorf("create claim c: %w", apierrors.NewForbidden(claims, "c", errors.New(`User "x" cannot create`))), true, false},
		{"other", errors.New("boom"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Settle(context.Background(), tc.err)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want an error: %v", err, tc.wantErr)
			}
			if (res.RequeueAfter > 0) != tc.wantRequeue {
				t.Fatalf("RequeueAfter = %v, want a requeue: %v", res.RequeueAfter, tc.wantRequeue)
			}
		})
	}
}
