package v1alpha1

// Announce is how nodes name themselves to clients in redirects (MOVED, ASK) and in
// CLUSTER SLOTS / CLUSTER SHARDS replies.
// +kubebuilder:validation:Enum=ip;hostname
type Announce string

const (
	// AnnounceIP names nodes by their pod IPs (the default).
	AnnounceIP Announce = "ip"
	// AnnounceHostname makes nodes announce their pod DNS names under the cluster's headless
	// Service (cluster-announce-hostname, cluster-preferred-endpoint-type hostname).
	AnnounceHostname Announce = "hostname"
)

// TLSSpec turns TLS on for every link of a cluster: clients, replication and the cluster
// bus. Exactly one of secretName and generate is set. It is fixed when the cluster is
// created: servers with and without TLS, or trusting different CAs, cannot talk.
//
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != (has(self.generate) && self.generate)",message="tls: set exactly one of secretName and generate: true"
type TLSSpec struct {
	// SecretName names a Secret of the cluster's namespace with tls.crt, tls.key and
	// ca.crt (cert-manager's format). Its certificate must cover the names clients use
	// (the client Service's and the pods' DNS names). A renewed certificate in the same
	// Secret is served without a restart.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	SecretName string `json:"secretName,omitempty"`

	// Generate: the operator keeps the cluster's own CA (Secret <cluster>-ca) and issues
	// the servers' certificate (Secret <cluster>-tls, with ca.crt for clients to trust),
	// covering the Services' and pods' DNS names and the pod IPs, and renews it before it
	// expires.
	// +optional
	Generate bool `json:"generate,omitempty"`

	// PlaintextPort also serves plaintext clients on this port. Off by default: with TLS,
	// port 6379 speaks TLS only.
	// +optional
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:validation:XValidation:rule="self != 6379 && self != 16379",message="tls.plaintextPort must differ from the TLS port 6379 and the bus port 16379"
	PlaintextPort *int32 `json:"plaintextPort,omitempty"`
}

// UserSpec is a Valkey ACL user, applied live on every node of the cluster (ACL SETUSER;
// no restart) and removed from every node when it leaves the list.
type UserSpec struct {
	// Name of the user. "default" is Valkey's default user: when spec.users is set it is
	// off unless listed. "valkey-operator" (the operator's own user), "valkey-replication" (the
	// replicas' user) and "valkey-metrics" (the metrics exporter's) are reserved.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._:-]*$`
	// +kubebuilder:validation:XValidation:rule="self != 'valkey-operator'",message="users[].name valkey-operator is reserved for the operator's own user"
	// +kubebuilder:validation:XValidation:rule="self != 'valkey-replication'",message="users[].name valkey-replication is reserved for the replicas' user"
	// +kubebuilder:validation:XValidation:rule="self != 'valkey-metrics'",message="users[].name valkey-metrics is reserved for the metrics exporter's user"
	Name string `json:"name"`

	// PasswordSecrets: each names a Secret key holding one password the user may
	// authenticate with. To rotate without downtime: add the new Secret, move clients to
	// it, then remove the old one.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=map
	// +listMapKey=name
	// +listMapKey=key
	PasswordSecrets []SecretKeyRef `json:"passwordSecrets"`

	// Rules are Valkey ACL rules granting commands, keys and channels, for example
	// ["~app:*", "+@read", "+@write"]. A user has nothing that is not granted. Rules that
	// set passwords or switch the user on or off are refused: passwords come from
	// passwordSecrets.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:XValidation:rule="!(self.lowerAscii() in ['on', 'off', 'nopass', 'resetpass', 'reset']) && !self.startsWith('>') && !self.startsWith('<') && !self.startsWith('#') && !self.startsWith('!')",message="users[].rules may not set passwords or switch the user on or off (on, off, nopass, resetpass, reset in any case, >, <, #, !): passwords come from passwordSecrets"
	// +kubebuilder:validation:items:XValidation:rule="self.matches('^[!#-&(-~]+$')",message="users[].rules: one rule per item, of printable ASCII without spaces or quotes (a quote would stop restarted servers from reading their users)"
	Rules []string `json:"rules,omitempty"`
}
