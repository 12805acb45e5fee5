// Package access decides who may reach a cluster's servers: the default user's password
// (ClusterPassword: the Secret spec.passwordSecret names, or <cluster>-auth, generated once
// and never taken from another cluster of the same name), the operator's own user
// (<cluster>-operator), the users of spec.users (Prepare plans them and writes the ACL
// Secret <cluster>-acl before any pod mounts it; ApplyUsers sets them live on every
// reachable server and returns UsersApplied), and the owned Secrets' rules (WriteSecret,
// OwnedNodes: a Secret not made by the operator is used only once the cluster has nodes,
// or when annotated valkey.io/adopt).
//
// It reads the cluster, its Secrets (past the cache) and the servers, and writes the Secrets
// above and events; the cluster's status is the reconciler's (a PasswordError says why a
// Secret cannot be used). Its one record between rounds is the form each server lists a
// user in.
package access
