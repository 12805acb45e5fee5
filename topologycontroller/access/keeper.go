package access

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Keeper keeps who may reach the servers of the clusters of one controller: the default
// user's password (its Secret generated or named), the operator's own user and its Secret,
// the users of spec.users (planned, applied on every reachable server, written into the ACL
// Secret the pods mount), and the Secrets the controller owns. It keeps one record between
// rounds: the form each server lists a user in (aclForms).
type Keeper struct {
	Client client.Client
	// APIReader reads the Secrets past the cache (no Secret is cached).
	APIReader client.Reader
	Recorder  recorder.EventRecorder

	forms aclForms
}
