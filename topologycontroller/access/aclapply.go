package access

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/valkey-io/valkey-go"

	valkeyv1 "valkey.io/operator/apis/v1alpha1"
	"valkey.io/operator/internal/acl"
	"valkey.io/operator/topologycontroller/round"
)

// usersOutcome is what applying the users did this round.
type usersOutcome struct {
	verified map[string]bool     // users some server has as planned
	refused  map[string]string   // user → a server's refusal of its rules
	pending  []string            // nodes whose users could not be read or applied
	applied  map[string][]string // user → nodes it was applied to
	removed  map[string][]string // user → nodes it was deleted from
	created  []string            // nodes the operator's user was created on
	held     map[string]string   // node → why its replication user stays off (see replicationHeld)
	released []string            // nodes whose replication user was switched on
}

func newUsersOutcome() *usersOutcome {
	return &usersOutcome{verified: map[string]bool{}, refused: map[string]string{},
		applied: map[string][]string{}, removed: map[string][]string{}, held: map[string]string{}}
}

// applyUsers gives every reachable server the planned users: ACL LIST and CONFIG GET
// masteruser (one pipeline per server and round when nothing differs), then, only where a
// user differs, ACL SETUSER (reset and all of the user in one atomic command: connections
// stay, a kept password keeps working), and ACL DELUSER for users no longer listed (their
// connections are closed). The operator's user comes first: a server started before it
// existed is reached with the default user's password until then; the replication user
// second: a replica restarted with it as its masteruser authenticates once its primary has
// it. While a server still replicates as the operator's user (started by an earlier
// valkey-start), the operator's user keeps the replication grants it had then.
func (k *Keeper) applyUsers(ctx context.Context, st *round.State, p *UserPlan) *usersOutcome {
	out := newUsersOutcome()
	listed := map[*round.Member]map[string]acl.Listed{}
	legacy := false
	for _, m := range st.SortedMembers() {
		l, masterUser, err := readUsers(ctx, st.Conns, m)
		if err != nil {
			out.pending = append(out.pending, m.Node.Name+": "+err.Error())
			continue
		}
		listed[m] = l
		legacy = legacy || masterUser == valkeyv1.OperatorUser
	}
	if legacy {
		p.operator.Rules = acl.LegacyOperatorRules
	}
	for _, m := range st.SortedMembers() {
		if l, ok := listed[m]; ok {
			if err := k.applyUsersOn(ctx, st, m, p, l, out); err != nil {
				out.pending = append(out.pending, m.Node.Name+": "+err.Error())
			}
		}
	}
	return out
}

// readUsers is a server's users (ACL LIST) and the user its replication authenticates as
// (CONFIG GET masteruser), in one pipeline.
func readUsers(ctx context.Context, cs *round.Conns, m *round.Member) (map[string]acl.Listed, string, error) {
	res, err := cs.Multi(ctx, m.Addr, [][]string{{"ACL", "LIST"}, {"CONFIG", "GET", "masteruser"}})
	if err != nil {
		return nil, "", err
	}
	lines, err := res[0].AsStrSlice()
	if err != nil {
		return nil, "", fmt.Errorf("ACL LIST on %s: %w", m.Addr, err)
	}
	kv, err := res[1].AsStrSlice()
	if err != nil {
		return nil, "", fmt.Errorf("CONFIG GET masteruser on %s: %w", m.Addr, err)
	}
	masterUser := ""
	if len(kv) == 2 {
		masterUser = kv[1]
	}
	return acl.ParseList(lines), masterUser, nil
}

// applyUsersOn applies the planned users on one server whose users are listed.
func (k *Keeper) applyUsersOn(ctx context.Context, st *round.State, m *round.Member, p *UserPlan, listed map[string]acl.Listed, out *usersOutcome) error {
	var cmds [][]string
	var set []acl.User
	replication, metrics := p.replication, p.metrics
	replication.Rules = acl.ReplicationRules(m.ValkeyMajor())
	metrics.Rules = acl.MetricsRules(m.ValkeyMajor())
	replication, held := plannedReplication(st, m, keptAuth(replication, listed), listed)
	if held != "" {
		out.held[m.Node.Name] = held
	} else if l, ok := listed[acl.ReplicationUser]; ok && !l.On {
		out.released = append(out.released, m.Node.Name)
	}
	own := []acl.User{keptAuth(p.operator, listed), replication, keptAuth(metrics, listed)}
	for _, u := range append(own, p.users...) {
		l, ok := listed[u.Name]
		if ok && k.forms.matches(l, u) {
			out.verified[u.Name] = true
			continue
		}
		cmds = append(cmds, u.SetUser())
		set = append(set, u)
	}
	var gone []string
	for name := range listed {
		if name != valkeyv1.OperatorUser && name != acl.ReplicationUser && name != acl.MetricsUser && name != "default" && !p.listed[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	if len(cmds) == 0 && len(gone) == 0 {
		return nil
	}
	for _, name := range gone {
		cmds = append(cmds, []string{"ACL", "DELUSER", name})
	}
	cmds = append(cmds, []string{"ACL", "LIST"})
	return k.sendUsers(ctx, st.Conns, m, cmds, set, gone, listed, out)
}

// keptAuth is the operator's, the replication or the metrics user as planned for a server.
// A server that lists the planned password among others gets exactly the planned one: a
// password added by hand (by a client once granted +acl) is removed. A server that lists
// none of the planned passwords keeps those it lists: its pod started with them and holds
// them for its probes and replication (the operator reaches such a server with the default
// user's password, or reports PasswordRejected) until it restarts with the planned one.
func keptAuth(op acl.User, listed map[string]acl.Listed) acl.User {
	l, ok := listed[op.Name]
	if !ok || len(l.Hashes) == 0 || slices.ContainsFunc(op.Hashes, func(h string) bool { return slices.Contains(l.Hashes, h) }) {
		return op
	}
	op.Hashes = l.Hashes
	return op
}

// sendUsers pipelines the ACL commands of one server and records their outcome; the last
// command is ACL LIST, from which the server's form of each user it accepted is learnt.
func (k *Keeper) sendUsers(ctx context.Context, cs *round.Conns, m *round.Member, cmds [][]string, set []acl.User, gone []string, before map[string]acl.Listed, out *usersOutcome) error {
	cl, err := cs.Get(m.Addr)
	if err != nil {
		return err
	}
	built := make([]valkey.Completed, 0, len(cmds))
	for _, c := range cmds {
		built = append(built, cl.B().Arbitrary(c...).Build())
	}
	round.CommandsSent.Add(int64(len(built)))
	res := cl.DoMulti(ctx, built...)
	var after map[string]acl.Listed
	if lines, err := res[len(res)-1].AsStrSlice(); err == nil {
		after = acl.ParseList(lines)
	}
	var failed []string
	for i, u := range set {
		if err := res[i].Error(); err != nil {
			if isUnreachable(err) {
				failed = append(failed, err.Error())
				continue
			}
			out.refused[u.Name] = fmt.Sprintf("%s: %v", m.Node.Name, err)
			continue
		}
		if l, ok := after[u.Name]; ok {
			k.forms.learn(u, l)
		}
		out.verified[u.Name] = true
		out.applied[u.Name] = append(out.applied[u.Name], m.Node.Name)
		if _, existed := before[u.Name]; !existed && u.Name == valkeyv1.OperatorUser {
			out.created = append(out.created, m.Node.Name)
		}
	}
	for i, name := range gone {
		if err := res[len(set)+i].Error(); err != nil {
			failed = append(failed, fmt.Sprintf("ACL DELUSER %s: %v", name, err))
			continue
		}
		out.removed[name] = append(out.removed[name], m.Node.Name)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return nil
}

// isUnreachable tells a lost connection or timeout from a reply of the server.
func isUnreachable(err error) bool {
	_, isReply := valkey.IsValkeyErr(err)
	return !isReply
}

// aclForms are the forms servers list users in (ACL LIST rewrites rules: "+@read" may be
// listed as "resetchannels -@all +@read"), learnt from the ACL LIST that follows each ACL
// SETUSER: a server that lists a user in a form learnt for its rules has the user as
// planned. After a restart of the controller each user is set once more, then settles.
type aclForms struct {
	mu    sync.Mutex
	forms map[string]map[string]bool // User.RulesKey → forms
}

func (f *aclForms) matches(l acl.Listed, u acl.User) bool {
	if !l.SameAuth(u) {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.forms[u.RulesKey()][l.Rest]
}

func (f *aclForms) learn(u acl.User, l acl.Listed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.forms == nil {
		f.forms = map[string]map[string]bool{}
	}
	k := u.RulesKey()
	if f.forms[k] == nil {
		f.forms[k] = map[string]bool{}
	}
	f.forms[k][l.Rest] = true
}
