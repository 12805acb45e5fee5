package access

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/status"
	"valkey.io/operator/topologycontroller/round"
)

// ApplyUsers applies the planned users on every reachable server, writes the ACL Secret with
// the lines servers accepted, and returns UsersApplied (nil without spec.users), with a
// Warning event for each new problem.
func (k *Keeper) ApplyUsers(ctx context.Context, st *round.State, p *UserPlan) (*metav1.Condition, error) {
	out := k.applyUsers(ctx, st, p)
	if err := k.writeACLSecret(ctx, st.Cluster, p, p.aclFile(out.verified)); err != nil {
		return nil, err
	}
	k.userEvents(st.Cluster, out)
	k.replicationHoldEvents(st, out)
	if len(st.Cluster.Spec.Users) == 0 {
		return nil, nil
	}
	c := usersCondition(st, p, out)
	if cur := status.Get(st.Cluster.Status.Conditions, valkeyv1.ConditionUsersApplied); c.Status == metav1.ConditionFalse &&
		c.Reason != valkeyv1.ReasonApplyingUsers && (cur == nil || cur.Reason != c.Reason || cur.Message != c.Message) {
		k.Recorder.Eventf(st.Cluster, nil, corev1.EventTypeWarning, c.Reason, "ApplyUsers", "%s", c.Message)
	}
	return &c, nil
}

// usersCondition is UsersApplied: False with the problems (a user whose Secret is missing,
// rules a server refused), else False while some server could not be given the users,
// else True.
func usersCondition(st *round.State, p *UserPlan, out *usersOutcome) metav1.Condition {
	var msgs []string
	reason := ""
	for _, prob := range p.problems {
		msgs = append(msgs, prob.msg)
		reason = prob.reason
	}
	for _, u := range st.Cluster.Spec.Users {
		if why, ok := out.refused[u.Name]; ok {
			msgs = append(msgs, fmt.Sprintf("user %s: Valkey refused its rules (%s); the user is left as it is: fix spec.users[%s].rules", u.Name, why, u.Name))
			if reason == "" {
				reason = valkeyv1.ReasonACLRuleRefused
			}
		}
	}
	if reason != "" {
		return status.Condition(valkeyv1.ConditionUsersApplied, false, reason, strings.Join(msgs, "; "))
	}
	if len(out.pending) > 0 || len(st.Members) < len(st.Nodes) {
		return status.Condition(valkeyv1.ConditionUsersApplied, false, valkeyv1.ReasonApplyingUsers,
			fmt.Sprintf("applying users to the nodes (%d of %d reachable)%s", len(st.SortedMembers())-len(out.pending), len(st.Nodes), pendingSuffix(out.pending)))
	}
	return status.Condition(valkeyv1.ConditionUsersApplied, true, valkeyv1.ReasonUsersApplied,
		fmt.Sprintf("%d users on every node", len(st.Cluster.Spec.Users)))
}

func pendingSuffix(pending []string) string {
	if len(pending) == 0 {
		return ""
	}
	return ": " + strings.Join(pending, "; ")
}

// userEvents reports the users applied and removed this round, and the operator's user
// created on servers started without it.
func (k *Keeper) userEvents(vc *valkeyv1.ValkeyCluster, out *usersOutcome) {
	if len(out.created) > 0 {
		k.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventOperatorUserCreated, "ApplyUsers",
			"created the operator's user %s on %s (servers started without it); the operator authenticates as it from now on",
			valkeyv1.OperatorUser, strings.Join(out.created, ", "))
	}
	for _, name := range sortedKeys(out.applied) {
		if name == valkeyv1.OperatorUser && len(out.created) > 0 {
			continue
		}
		k.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventUserApplied, "ApplyUsers",
			"applied user %s on %s", name, strings.Join(out.applied[name], ", "))
	}
	for _, name := range sortedKeys(out.removed) {
		k.Recorder.Eventf(vc, nil, corev1.EventTypeNormal, valkeyv1.EventUserRemoved, "ApplyUsers",
			"removed user %s from %s (no longer in spec.users; its connections are closed)", name, strings.Join(out.removed[name], ", "))
	}
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Prepare reads the operator's password (making its Secret) and plans the users, and
// makes sure the cluster's ACL Secret exists before any pod mounts it (with the lines
// servers accepted before).
func (k *Keeper) Prepare(ctx context.Context, vc *valkeyv1.ValkeyCluster, defaultPassword string) (round.Credentials, *UserPlan, error) {
	opPassword, err := k.operatorPassword(ctx, vc)
	if err != nil {
		return round.Credentials{}, nil, err
	}
	plan, err := k.planUsers(ctx, vc, opPassword, defaultPassword)
	if err != nil {
		return round.Credentials{}, nil, err
	}
	if err := k.writeACLSecret(ctx, vc, plan, plan.aclFile(nil)); err != nil {
		return round.Credentials{}, nil, err
	}
	return round.Credentials{User: valkeyv1.OperatorUser, Password: opPassword, DefaultPassword: defaultPassword}, plan, nil
}
