package owned

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// updateManagers are the field managers under which an earlier release of the controller
// that applies as fieldManager may have written an object by create, update or patch
// (operation Update): fieldManager itself, and the controller's binary name (fieldManager
// without "valkey-", such as workload-controller), which the API server records when a
// client names no manager.
func updateManagers(fieldManager string) sets.Set[string] {
	return sets.New(fieldManager, strings.TrimPrefix(fieldManager, "valkey-"))
}

// TakeOverUpdates moves the fields obj's managed fields give to updateManagers by Update into
// fieldManager's Apply entry (client-go's csaupgrade, the same step kubectl takes from
// client-side to server-side apply). Until then such fields stay owned by the Update entry,
// and a field the controller stops applying is never removed. The patch carries obj's
// resourceVersion, so a change in between is refused (Conflict) and tried again by the next
// reconcile. It tells whether it changed anything; a user's own managers are left alone.
// An object with no such Update entry is not written: csaupgrade re-encodes the apply
// entry even then, and its bytes may differ from the API server's (a StatefulSet's do), which
// made two more writes of every StatefulSet apply.
func TakeOverUpdates(ctx context.Context, c client.Client, obj client.Object, fieldManager string) (bool, error) {
	managers := updateManagers(fieldManager)
	if !hasUpdateEntry(obj, managers) {
		return false, nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, managers, fieldManager)
	if err != nil {
		return false, fmt.Errorf("managed fields of %T %s: %w", obj, obj.GetName(), err)
	}
	if patch == nil {
		return false, nil
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return false, fmt.Errorf("move the fields of %T %s written by update to %s: %w", obj, obj.GetName(), fieldManager, err)
	}
	return true, nil
}

// hasUpdateEntry tells whether obj's managed fields hold an Update entry of the object itself
// (not a subresource) by one of managers.
func hasUpdateEntry(obj client.Object, managers sets.Set[string]) bool {
	for _, e := range obj.GetManagedFields() {
		if managers.Has(e.Manager) && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
			return true
		}
	}
	return false
}
