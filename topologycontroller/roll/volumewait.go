package roll

import (
	"context"
	"fmt"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/failover"
	"valkey.io/operator/topologycontroller/round"
)

// A node waiting for its volume (VolumeReady is not True: its claim is being created, waits
// for a volume, or cannot be used) holds only its own roll: it is not counted as a roll in
// progress, its missing pod does not make the cluster unstable for the others, and it
// holds its own shard's primary only while its claim is on its way (see volumeHold).

// noPodForVolume tells whether n has no pod because its claim is not ready: the workload
// is not created before VolumeReady=True, so n serves nothing.
func noPodForVolume(n *valkeyv1.ValkeyNode) bool {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionWorkloadReady)
	return c != nil && !status.IsTrue(n.Status.Conditions, valkeyv1.ConditionWorkloadReady) && c.Reason == valkeyv1.ReasonWaitingForVolume
}

// rollWaitsForVolume tells whether n's new template waits for its claim (RollPending=False,
// WaitingForVolume): its pod, if any, runs the previous template.
func rollWaitsForVolume(n *valkeyv1.ValkeyNode) bool {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionRollPending)
	return c != nil && c.Reason == valkeyv1.ReasonWaitingForVolume
}

// waitsForVolume tells whether n's pod or its roll waits for its claim.
func waitsForVolume(n *valkeyv1.ValkeyNode) bool { return noPodForVolume(n) || rollWaitsForVolume(n) }

// volumeNeedsUser tells whether n's volume waits for the user rather than for the storage
// system: a class that does not exist, a class change refused for a bound claim, a claim of
// another identity, a lost claim, a claim that a restored node cannot restore into. Nothing
// changes until the user acts.
func volumeNeedsUser(n *valkeyv1.ValkeyNode) bool {
	c := status.Get(n.Status.Conditions, valkeyv1.ConditionVolumeReady)
	if c == nil || status.IsTrue(n.Status.Conditions, valkeyv1.ConditionVolumeReady) {
		return false
	}
	switch c.Reason {
	case valkeyv1.ReasonStorageClassNotFound, valkeyv1.ReasonStorageClassImmutable, valkeyv1.ReasonClaimConflict, valkeyv1.ReasonClaimLost,
		valkeyv1.ReasonRestoreClaimExists:
		return true
	}
	return false
}

// volumeHold is a node of p's shard (not a primary Valkey reaches) whose pod or roll waits for
// a claim that is on its way (being created, waiting for a volume, or a status not written
// yet): p, a primary that owns slots, waits for it, or p would be failed over twice (its
// replica's roll comes later) or restarted without the replica about to come. A node whose
// volume waits for the user holds nothing. nil when p need not wait.
func volumeHold(st *Round, p *valkeyv1.ValkeyNode) *valkeyv1.ValkeyNode {
	for _, o := range st.Nodes {
		if o.Name == p.Name || o.Spec.Shard != p.Spec.Shard || !o.DeletionTimestamp.IsZero() {
			continue
		}
		if m := st.Members[o.Name]; m.Reachable() && m.Self.Primary() {
			continue
		}
		if waitsForVolume(o) && !volumeNeedsUser(o) {
			return o
		}
	}
	return nil
}

// replicaLackingVolume is a node of p's shard that has no pod because its claim waits for
// the user; nil when there is none.
func replicaLackingVolume(st *Round, p *valkeyv1.ValkeyNode) *valkeyv1.ValkeyNode {
	for _, o := range st.Nodes {
		if o.Name != p.Name && o.Spec.Shard == p.Spec.Shard && o.DeletionTimestamp.IsZero() && noPodForVolume(o) {
			return o
		}
	}
	return nil
}

// restartsOnItsData tells whether the server at addr keeps its data set over a restart:
// it snapshots (save points) or logs (appendonly), which the operator renders only with
// persistence, whose /data is the node's claim. A server on an emptyDir loses its keys.
func restartsOnItsData(ctx context.Context, cs *round.Conns, addr string) (bool, error) {
	save, err := configValue(ctx, cs, addr, "save")
	if err != nil {
		return false, err
	}
	aof, err := configValue(ctx, cs, addr, "appendonly")
	if err != nil {
		return false, err
	}
	return save != "" || aof == "yes", nil
}

// configValue is CONFIG GET of one parameter on the server at addr.
func configValue(ctx context.Context, cs *round.Conns, addr, name string) (string, error) {
	r, err := cs.Do(ctx, addr, "CONFIG", "GET", name)
	if err != nil {
		return "", err
	}
	kv, err := r.AsStrMap()
	if err != nil {
		return "", fmt.Errorf("CONFIG GET %s on %s: %w", name, addr, err)
	}
	return kv[name], nil
}

// volumeWait says why primary p, which owns slots, may not roll now because of a node of its
// shard whose claim is not ready; "" when it may. It waits for a claim on its way
// (volumeHold). With no replica in sync and a replica that has no pod because its claim
// waits for the user, it rolls without a replica only when its server finds its data again
// after the restart (restartsOnItsData): a server on an emptyDir would come back empty.
// (replicas: 0 keeps its documented behaviour: no such replica.)
func (ro *Rolls) volumeWait(ctx context.Context, st *Round, p *valkeyv1.ValkeyNode) string {
	if o := volumeHold(st, p); o != nil {
		return "replicas roll first: waiting for the claim of " + o.Name
	}
	m := st.RollMember(p)
	o := replicaLackingVolume(st, p)
	if o == nil || m == nil || len(failover.SyncedReplicas(st.State, m)) > 0 {
		return ""
	}
	durable, err := restartsOnItsData(ctx, st.Conns, m.Addr)
	switch {
	case err != nil:
		return fmt.Sprintf("%s has no replica (%s waits for its claim) and whether it keeps its data over a restart is unknown: %v", p.Name, o.Name, err)
	case !durable:
		return fmt.Sprintf("%s has no replica (%s waits for its claim) and keeps its data in memory only: it is not restarted until %s's claim is ready", p.Name, o.Name, o.Name)
	}
	return ""
}
