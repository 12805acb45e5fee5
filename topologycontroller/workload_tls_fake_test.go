package topologycontroller_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
)

// mountTLS plays the kubelet's Secret volume for a node with spec.tls: the Secret's
// tls.crt, tls.key and ca.crt in a directory of its own, through a ..data symlink swapped
// atomically when the Secret changes (as the kubelet updates a mounted Secret). It returns
// the directory ("" without spec.tls) and fails while the Secret is missing, as a pod
// waits for its volume.
func (f *fakeWorkload) mountTLS(ctx context.Context, n *valkeyv1.ValkeyNode) (string, error) {
	name := n.TLSSecret()
	if name == "" {
		return "", nil
	}
	var s corev1.Secret
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: n.Namespace, Name: name}, &s); err != nil {
		return "", fmt.Errorf("TLS Secret of %s: %w", n.Name, err)
	}
	if f.tlsDirs == nil {
		f.tlsDirs = map[string]string{}
	}
	dir := f.tlsDirs[n.Name]
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "valkey-tls-"); err != nil {
			return "", err
		}
		f.tlsDirs[n.Name] = dir
	}
	return dir, syncSecretDir(dir, s.ResourceVersion, s.Data)
}

// syncSecretDir writes data into dir/..<version> and points dir/..data at it, unless it
// already does; the files are symlinks through ..data.
func syncSecretDir(dir, version string, data map[string][]byte) error {
	link := filepath.Join(dir, "..data")
	target := "..v" + version
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	vdir := filepath.Join(dir, target)
	if err := os.MkdirAll(vdir, 0o700); err != nil {
		return err
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(vdir, k), v, 0o600); err != nil {
			return err
		}
	}
	tmp := filepath.Join(dir, "..data_tmp"+strconv.Itoa(os.Getpid()))
	_ = os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		return err
	}
	for k := range data {
		file := filepath.Join(dir, k)
		if _, err := os.Lstat(file); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join("..data", k), file); err != nil {
			return err
		}
	}
	return nil
}
