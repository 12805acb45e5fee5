package access

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/acl"
)

// UserPlan is what a reconcile gives the cluster's servers: the operator's own user, the
// replication and metrics users, the users of spec.users whose password Secrets are whole, and the
// default user (last).
type UserPlan struct {
	operator    acl.User
	replication acl.User
	metrics     acl.User
	users       []acl.User
	// listed are the names of spec.users (a listed user is never deleted, even while its
	// Secret is missing or its rules are refused).
	listed map[string]bool
	// problems are the users left as they are this round (reason UserSecretMissing or
	// ACLRuleRefused), in spec order.
	problems []userProblem
	// aclSecret is the cluster's ACL Secret as read (nil when missing), and previous its
	// lines by user name.
	aclSecret *corev1.Secret
	previous  map[string]string
}

// userProblem is a user left as it is on the servers, and why.
type userProblem struct{ user, reason, msg string }

// planUsers reads the users' password Secrets (past the cache) and the cluster's ACL
// Secret, and plans the users. defaultPassword is the password of the default user when
// spec.users does not list it (the cluster's password Secret); without spec.users the
// default user keeps it with every permission, as servers with only requirepass had.
func (k *Keeper) planUsers(ctx context.Context, vc *valkeyv1.ValkeyCluster, operatorPassword, defaultPassword string) (*UserPlan, error) {
	p := &UserPlan{operator: acl.Operator(valkeyv1.OperatorUser, operatorPassword),
		replication: acl.Replication(operatorPassword, 0), metrics: acl.Metrics(operatorPassword, 0), listed: map[string]bool{}}
	if err := k.readACLSecret(ctx, vc, p); err != nil {
		return nil, err
	}
	secrets := map[string]*corev1.Secret{}
	for i, u := range vc.Spec.Users {
		p.listed[u.Name] = true
		if prob := ruleProblem(i, u); prob != nil {
			p.problems = append(p.problems, *prob)
			continue
		}
		hashes, prob, err := k.userHashes(ctx, vc.Namespace, u, secrets)
		if err != nil {
			return nil, err
		}
		if prob != nil {
			p.problems = append(p.problems, *prob)
			continue
		}
		p.users = append(p.users, acl.User{Name: u.Name, On: true, Hashes: hashes, Rules: u.Rules})
	}
	switch {
	case p.listed["default"]:
	case len(vc.Spec.Users) > 0:
		p.users = append(p.users, acl.User{Name: "default"})
	default:
		p.users = append(p.users, acl.User{Name: "default", On: true, Hashes: []string{acl.Hash(defaultPassword)}, Rules: acl.DefaultRules})
	}
	return p, nil
}

// ruleProblem refuses a user whose rules Valkey must not be given (acl.CheckRule): admission
// refuses them too, but a ValkeyCluster stored before that rule existed may hold one.
func ruleProblem(i int, u valkeyv1.UserSpec) *userProblem {
	for j, rule := range u.Rules {
		if err := acl.CheckRule(rule); err != nil {
			return &userProblem{u.Name, valkeyv1.ReasonACLRuleRefused, fmt.Sprintf(
				"user %s: spec.users[%d].rules[%d] %q %v; the user is left as it is on the servers: fix or remove the rule",
				u.Name, i, j, rule, err)}
		}
	}
	return nil
}

// userHashes are the hashes of a user's passwords; a problem when a Secret or its key is
// missing.
func (k *Keeper) userHashes(ctx context.Context, ns string, u valkeyv1.UserSpec, secrets map[string]*corev1.Secret) ([]string, *userProblem, error) {
	hashes := make([]string, 0, len(u.PasswordSecrets))
	for _, ref := range u.PasswordSecrets {
		key := ref.Key
		if key == "" {
			key = valkeyv1.DefaultPasswordKey
		}
		s, ok := secrets[ref.Name]
		if !ok {
			s = &corev1.Secret{}
			err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, s)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, nil, fmt.Errorf("get Secret %s of user %s: %w", ref.Name, u.Name, err)
			}
			if err != nil {
				s = nil
			}
			secrets[ref.Name] = s
		}
		if s == nil {
			return nil, &userProblem{u.Name, valkeyv1.ReasonUserSecretMissing, fmt.Sprintf(
				"user %s: Secret %s does not exist; the user is left as it is on the servers: create it, or remove it from the user's passwordSecrets",
				u.Name, ref.Name)}, nil
		}
		if len(s.Data[key]) == 0 {
			return nil, &userProblem{u.Name, valkeyv1.ReasonUserSecretMissing, fmt.Sprintf(
				"user %s: Secret %s has no value under key %q; the user is left as it is on the servers: add the key, or name the right one",
				u.Name, ref.Name, key)}, nil
		}
		hashes = append(hashes, acl.Hash(string(s.Data[key])))
	}
	return hashes, nil, nil
}

// readACLSecret reads the cluster's ACL Secret into p (aclSecret, previous).
func (k *Keeper) readACLSecret(ctx context.Context, vc *valkeyv1.ValkeyCluster, p *UserPlan) error {
	p.previous = map[string]string{}
	var s corev1.Secret
	err := k.APIReader.Get(ctx, client.ObjectKey{Namespace: vc.Namespace, Name: valkeyv1.ACLSecretName(vc.Name)}, &s)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get Secret %s: %w", valkeyv1.ACLSecretName(vc.Name), err)
	}
	if err := k.notOwnedSecret(ctx, vc, &s); err != nil {
		return err
	}
	p.aclSecret = &s
	for _, line := range strings.Split(string(s.Data[valkeyv1.ACLFileKey]), "\n") {
		if name, ok := acl.ParseLine(line); ok {
			p.previous[name] = line
		}
	}
	return nil
}

// aclFile is the content of the ACL Secret: the line of each planned user that a server
// accepted (verified) or that the file already has, else the user's previous line (a
// user left as it is keeps it; a line no server accepted yet could stop a server from
// starting). The default user's line is always there unless spec.users lists it: its
// rules are then the operator's own.
func (p *UserPlan) aclFile(verified map[string]bool) string {
	var b strings.Builder
	b.WriteString("# users of the cluster, written by the topology controller from spec.users; passwords are SHA-256 hashes\n")
	done := map[string]bool{}
	for _, u := range p.users {
		line := u.Line()
		if p.listed[u.Name] && !verified[u.Name] && line != p.previous[u.Name] {
			line = p.previous[u.Name]
		}
		if line != "" {
			b.WriteString(line + "\n")
		}
		done[u.Name] = true
	}
	for _, prob := range p.problems {
		if line := p.previous[prob.user]; line != "" && !done[prob.user] && acl.SafeLine(line) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
