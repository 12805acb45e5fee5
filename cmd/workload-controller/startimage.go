package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownImage is the image of this controller's own container: it holds valkey-start, so the
// server pods copy it from the very image the operator runs, whatever registry that is.
// The pod is named by POD_NAME and POD_NAMESPACE (the downward API in the Deployment).
func ownImage(ctx context.Context, c client.Reader) (string, error) {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return "", fmt.Errorf("POD_NAME and POD_NAMESPACE are not set (outside a pod, set --start-image)")
	}
	pod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
		return "", fmt.Errorf("read this controller's pod %s/%s: %w", ns, name, err)
	}
	for _, ct := range pod.Spec.Containers {
		if ct.Name == containerName {
			return ct.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container %q", ns, name, containerName)
}

// containerName is the controller's container in its Deployment.
const containerName = "manager"
