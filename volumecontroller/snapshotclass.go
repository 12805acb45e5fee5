package volumecontroller

import (
	"context"
	"fmt"
	"sort"
	"strings"

	snapshotv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
)

// annotationDefaultSnapshotClass marks the default VolumeSnapshotClass of a driver, as the
// snapshot-controller reads it.
const annotationDefaultSnapshotClass = "snapshot.storage.kubernetes.io/is-default-class"

// snapshotClassFor picks the VolumeSnapshotClass of a claim's snapshot: named (the
// backup's class, "" for none) or the default class of the claim's provisioner. It returns
// the class ("" lets the snapshot-controller pick, when classes are not read) and, when no
// class fits, why and what to do (the SnapshotUnsupported message).
func (r *Reconciler) snapshotClassFor(ctx context.Context, named string, claim *corev1.PersistentVolumeClaim) (string, string, error) {
	if r.Options.IgnoreStorageClasses {
		// Neither StorageClasses nor VolumeSnapshotClasses (cluster-scoped) are read: the
		// snapshot-controller picks the default class of the claim's driver.
		return named, "", nil
	}
	storageClass, err := r.resolveClass(ctx, claim.Spec.StorageClassName)
	if err != nil {
		return "", "", err
	}
	var list snapshotv1.VolumeSnapshotClassList
	if err := r.Snapshots.List(ctx, &list); err != nil {
		return "", "", fmt.Errorf("list VolumeSnapshotClasses: %w", err)
	}
	name, refused := pickSnapshotClass(named, claim.Name, storageClass, list.Items)
	return name, refused, nil
}

// pickSnapshotClass is the class choice of snapshotClassFor over the classes that exist:
// the named class, which must exist and be of the claim's provisioner when that is known;
// else the class of the provisioner marked default, or its only class when none is marked.
func pickSnapshotClass(named, claim string, storage classRef, classes []snapshotv1.VolumeSnapshotClass) (string, string) {
	if named != "" {
		return namedSnapshotClass(named, claim, storage, classes)
	}
	if storage.Class == nil {
		return "", fmt.Sprintf("claim %s has %s, so the driver of its snapshots is unknown: name a VolumeSnapshotClass in the backup's spec.volumeSnapshotClassName",
			claim, storage.describe())
	}
	driver := storage.Class.Provisioner
	var defaults, all []string
	for i := range classes {
		if classes[i].Driver != driver {
			continue
		}
		all = append(all, classes[i].Name)
		if classes[i].Annotations[annotationDefaultSnapshotClass] == "true" {
			defaults = append(defaults, classes[i].Name)
		}
	}
	sort.Strings(defaults)
	sort.Strings(all)
	switch {
	case len(defaults) == 1:
		return defaults[0], ""
	case len(defaults) > 1:
		return "", fmt.Sprintf("VolumeSnapshotClasses %s of driver %s are all marked default (%s): keep the mark on one, or name one in the backup's spec.volumeSnapshotClassName",
			strings.Join(defaults, ", "), driver, annotationDefaultSnapshotClass)
	case len(all) == 1:
		return all[0], ""
	case len(all) > 1:
		return "", fmt.Sprintf("VolumeSnapshotClasses %s are of driver %s and none is marked default: annotate one %s=\"true\", or name one in the backup's spec.volumeSnapshotClassName",
			strings.Join(all, ", "), driver, annotationDefaultSnapshotClass)
	}
	return "", fmt.Sprintf("no VolumeSnapshotClass has driver %s, the provisioner of StorageClass %s of claim %s: create one for that driver (annotated %s=\"true\"), or use a StorageClass whose driver supports snapshots",
		driver, storage.Name, claim, annotationDefaultSnapshotClass)
}

// namedSnapshotClass checks the class a backup names.
func namedSnapshotClass(named, claim string, storage classRef, classes []snapshotv1.VolumeSnapshotClass) (string, string) {
	for i := range classes {
		c := &classes[i]
		if c.Name != named {
			continue
		}
		if storage.Class != nil && c.Driver != storage.Class.Provisioner {
			return "", fmt.Sprintf("VolumeSnapshotClass %s is of driver %s, but claim %s is provisioned by %s (StorageClass %s): name a class of driver %s in the backup",
				named, c.Driver, claim, storage.Class.Provisioner, storage.Name, storage.Class.Provisioner)
		}
		return named, ""
	}
	return "", fmt.Sprintf("VolumeSnapshotClass %s, named by the backup, does not exist: create it, or take a backup that names another class", named)
}
