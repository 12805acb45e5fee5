// Package clusternodes reads a Valkey cluster's view of its members: the output of CLUSTER
// NODES, and nodes.conf, the file a server keeps it in (the same lines plus a "vars" line).
package clusternodes

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// SlotRange is an inclusive range of hash slots.
type SlotRange struct{ Start, End int }

// Node is one line of CLUSTER NODES.
type Node struct {
	ID        string
	Addr      string // ip:port of the client port, empty when unknown (noaddr)
	Flags     map[string]bool
	PrimaryID string // "" for a primary
	Epoch     int64
	Connected bool
	Slots     []SlotRange
	// Migrating and Importing are only reported on the node's own (myself) line:
	// slot → the node ID the slot moves to (migrating) or comes from (importing).
	Migrating map[int]string
	Importing map[int]string
}

// Myself tells whether the line is the reporting server's own.
func (n *Node) Myself() bool { return n.Flags["myself"] }

// Primary tells whether the node is a primary.
func (n *Node) Primary() bool { return n.Flags["master"] }

// Failed tells whether the node is failed or has no known address.
func (n *Node) Failed() bool { return n.Flags["fail"] || n.Flags["noaddr"] }

// Handshake tells whether the node is still in the MEET handshake.
func (n *Node) Handshake() bool { return n.Flags["handshake"] }

// SlotCount is the number of slots the node owns.
func (n *Node) SlotCount() int {
	total := 0
	for _, r := range n.Slots {
		total += r.End - r.Start + 1
	}
	return total
}

// Parse parses the output of CLUSTER NODES, or the content of nodes.conf.
func Parse(out string) ([]Node, error) {
	var nodes []Node
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "vars ") {
			continue
		}
		n, err := parseLine(line)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	return nodes, sc.Err()
}

// Myself returns the reporting server's own line, nil when there is none.
func Myself(nodes []Node) *Node {
	for i := range nodes {
		if nodes[i].Myself() {
			return &nodes[i]
		}
	}
	return nil
}

// ByID returns the node with the ID, nil when there is none.
func ByID(nodes []Node, id string) *Node {
	for i := range nodes {
		if nodes[i].ID == id {
			return &nodes[i]
		}
	}
	return nil
}

// ParseLine parses one line of CLUSTER NODES.
func ParseLine(line string) (Node, error) { return parseLine(strings.TrimSpace(line)) }

func parseLine(line string) (Node, error) {
	f := strings.Fields(line)
	if len(f) < 8 {
		return Node{}, fmt.Errorf("malformed CLUSTER NODES line %q", line)
	}
	n := Node{ID: f[0], Flags: map[string]bool{}, Connected: f[7] == "connected"}
	addr := f[1]
	if i := strings.IndexAny(addr, "@,"); i >= 0 {
		addr = addr[:i]
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && host != "" {
		n.Addr = addr
	}
	for _, fl := range strings.Split(f[2], ",") {
		n.Flags[fl] = true
	}
	if f[3] != "-" {
		n.PrimaryID = f[3]
	}
	n.Epoch, _ = strconv.ParseInt(f[6], 10, 64)
	for _, s := range f[8:] {
		if err := n.addSlots(s); err != nil {
			return Node{}, err
		}
	}
	return n, nil
}

// addSlots adds one slot field: "5", "0-99", "[5->-id]" (migrating) or "[5-<-id]" (importing).
func (n *Node) addSlots(s string) error {
	if strings.HasPrefix(s, "[") {
		return n.addSlotState(strings.Trim(s, "[]"))
	}
	a, b, isRange := strings.Cut(s, "-")
	start, err := strconv.Atoi(a)
	if err != nil {
		return fmt.Errorf("slot %q: %w", s, err)
	}
	end := start
	if isRange {
		if end, err = strconv.Atoi(b); err != nil {
			return fmt.Errorf("slot %q: %w", s, err)
		}
	}
	n.Slots = append(n.Slots, SlotRange{start, end})
	return nil
}

func (n *Node) addSlotState(s string) error {
	set := func(m *map[int]string, sep string) (bool, error) {
		i := strings.Index(s, sep)
		if i <= 0 {
			return false, nil
		}
		slot, err := strconv.Atoi(s[:i])
		if err != nil {
			return false, fmt.Errorf("slot state %q: %w", s, err)
		}
		if *m == nil {
			*m = map[int]string{}
		}
		(*m)[slot] = s[i+len(sep):]
		return true, nil
	}
	if ok, err := set(&n.Migrating, "->-"); ok || err != nil {
		return err
	}
	_, err := set(&n.Importing, "-<-")
	return err
}

// ParseInfo parses INFO output into key → value.
func ParseInfo(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}
