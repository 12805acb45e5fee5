package round

import (
	"fmt"
	"strconv"
	"strings"

	"valkey.io/operator/internal/clusternodes"
)

// viewScan reads one member's CLUSTER NODES reply in one pass and keeps only what a
// reconcile needs from it, so that what a reconcile holds grows with the number of nodes,
// not with its square: the member's own line, its seed score, which other members it does
// not see (yet) at their address, and the lines of nodes that are no member (IDs to forget,
// nodes whose pod is not ready). Only the seed's view is kept whole (see observe).
type viewScan struct {
	byID  map[string]*Member // the reachable members, by the ID each reported
	round int                // stamps the members this scan saw well
}

// scan fills m.self, m.lines, m.slots, m.unseen and m.others from out.
func (vs *viewScan) scan(m *Member, out string) error {
	vs.round++
	m.Lines, m.Slots, m.Unseen, m.Others, m.Bare = 0, 0, nil, nil, nil
	for rest := out; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "vars ") {
			continue
		}
		if err := vs.line(m, line); err != nil {
			return err
		}
	}
	if m.Self == nil {
		return fmt.Errorf("no myself line in CLUSTER NODES of %s", m.Addr)
	}
	for id, b := range vs.byID {
		if b != m && b.Seen != vs.round {
			if _, noted := m.Unseen[id]; !noted {
				m.Note(id, "")
			}
		}
	}
	return nil
}

// line takes one line of m's view into account.
func (vs *viewScan) line(m *Member, line string) error {
	id, rest := field(line)
	addrField, rest := field(rest)
	flags, rest := field(rest)
	handshake := hasFlag(flags, "handshake")
	m.Lines++
	slots := 0
	if !handshake {
		slots = lineSlots(rest)
		m.Slots += slots
	}
	if hasFlag(flags, "myself") {
		n, err := clusternodes.ParseLine(strings.Clone(line))
		if err != nil {
			return err
		}
		m.Self = &n
		return nil
	}
	if b := vs.byID[id]; b != nil {
		addr := lineAddr(addrField)
		if addr == b.Addr && !handshake && !hasFlag(flags, "fail") && !hasFlag(flags, "noaddr") && !hasFlag(flags, "fail?") {
			b.Seen = vs.round
			if slots == 0 && hasFlag(flags, "master") {
				m.Bare = append(m.Bare, b)
			}
		} else {
			m.Note(id, strings.Clone(addr))
		}
		return nil
	}
	n, err := clusternodes.ParseLine(strings.Clone(line))
	if err != nil {
		return err
	}
	m.Others = append(m.Others, n)
	return nil
}

// field splits off the first space-separated field of s.
func field(s string) (string, string) {
	s = strings.TrimLeft(s, " ")
	f, rest, _ := strings.Cut(s, " ")
	return f, rest
}

// hasFlag tells whether the comma-separated flags hold flag.
func hasFlag(flags, flag string) bool {
	for rest := flags; rest != ""; {
		var f string
		f, rest, _ = strings.Cut(rest, ",")
		if f == flag {
			return true
		}
	}
	return false
}

// lineAddr is the client address (ip:port) of a CLUSTER NODES address field.
func lineAddr(f string) string {
	if i := strings.IndexAny(f, "@,"); i >= 0 {
		f = f[:i]
	}
	if strings.HasPrefix(f, ":") {
		return "" // noaddr
	}
	return f
}

// lineSlots counts the slots of a CLUSTER NODES line from its fourth field on (primary,
// ping, pong, epoch, link state, then slots); malformed slot fields count nothing.
func lineSlots(rest string) int {
	for range 5 {
		_, rest = field(rest)
	}
	total := 0
	for rest != "" {
		var f string
		f, rest = field(rest)
		if f == "" || strings.HasPrefix(f, "[") {
			continue
		}
		a, b, isRange := strings.Cut(f, "-")
		start, err := strconv.Atoi(a)
		if err != nil {
			continue
		}
		end := start
		if isRange {
			if end, err = strconv.Atoi(b); err != nil {
				continue
			}
		}
		total += end - start + 1
	}
	return total
}
