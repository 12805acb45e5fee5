package volumecontroller

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Default StorageClass annotations (GA and beta), as the DefaultStorageClass admission
// plugin reads them.
const (
	annotationDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annotationDefaultClassBeta = "storageclass.beta.kubernetes.io/is-default-class"
)

// classRef is a resolved StorageClass: the class (nil when it does not exist) and its name.
type classRef struct {
	// Name of the class; for a claim without a class name, the cluster default's name.
	Name string
	// Class is nil when the named class does not exist, or no default exists.
	Class *storagev1.StorageClass
	// None is true for an explicit empty class name: no dynamic provisioning, no class.
	None bool
	// Unread is true when StorageClasses are not read (Options.IgnoreStorageClasses): the
	// class is neither known to exist nor known to be missing.
	Unread bool
}

// missing tells whether a class was asked for and not found.
func (c classRef) missing() bool { return c.Class == nil && !c.None && !c.Unread }

// describe names the class for messages.
func (c classRef) describe() string {
	switch {
	case c.None:
		return `no StorageClass ("")`
	case c.Unread && c.Name == "":
		return "the default StorageClass, not checked: StorageClasses are not read (--ignore-storage-classes)"
	case c.Unread:
		return "StorageClass " + c.Name + ", not checked: StorageClasses are not read (--ignore-storage-classes)"
	case c.Name == "":
		return "the default StorageClass"
	}
	return "StorageClass " + c.Name
}

// resolveClass resolves a class name with the controller's client, or not at all when
// StorageClasses are not read (an install without cluster-wide rights).
func (r *Reconciler) resolveClass(ctx context.Context, name *string) (classRef, error) {
	if !r.Options.IgnoreStorageClasses {
		return resolveClass(ctx, r.Client, name)
	}
	if name != nil && *name == "" {
		return classRef{None: true}, nil
	}
	return classRef{Name: ptr.Deref(name, ""), Unread: true}, nil
}

// resolveClass finds the StorageClass for a class name: the named class, or the cluster
// default when name is nil.
func resolveClass(ctx context.Context, c client.Reader, name *string) (classRef, error) {
	if name != nil {
		if *name == "" {
			return classRef{None: true}, nil
		}
		sc := &storagev1.StorageClass{}
		if err := c.Get(ctx, client.ObjectKey{Name: *name}, sc); err != nil {
			if apierrors.IsNotFound(err) {
				return classRef{Name: *name}, nil
			}
			return classRef{Name: *name}, fmt.Errorf("get StorageClass %s: %w", *name, err)
		}
		return classRef{Name: sc.Name, Class: sc}, nil
	}
	var list storagev1.StorageClassList
	if err := c.List(ctx, &list); err != nil {
		return classRef{}, fmt.Errorf("list StorageClasses: %w", err)
	}
	if sc := defaultClass(list.Items); sc != nil {
		return classRef{Name: sc.Name, Class: sc}, nil
	}
	return classRef{}, nil
}

// defaultClass picks the cluster's default StorageClass as the API server does: among the
// classes annotated as default, the newest (then the first by name); nil when none is.
func defaultClass(classes []storagev1.StorageClass) *storagev1.StorageClass {
	var best *storagev1.StorageClass
	for i := range classes {
		sc := &classes[i]
		if !isDefaultClass(sc) {
			continue
		}
		if best == nil || sc.CreationTimestamp.After(best.CreationTimestamp.Time) ||
			(sc.CreationTimestamp.Equal(&best.CreationTimestamp) && sc.Name < best.Name) {
			best = sc
		}
	}
	return best
}

// isDefaultClass tells whether a class is annotated as the cluster default.
func isDefaultClass(sc *storagev1.StorageClass) bool {
	return sc.Annotations[annotationDefaultClass] == "true" || sc.Annotations[annotationDefaultClassBeta] == "true"
}

// bindsOnFirstConsumer tells whether a class delays binding until a pod uses the claim.
func bindsOnFirstConsumer(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// allowsExpansion tells whether a class lets claims grow.
func allowsExpansion(sc *storagev1.StorageClass) bool {
	return sc != nil && sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
}
