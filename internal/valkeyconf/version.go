package valkeyconf

import (
	"embed"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Version is a Valkey server version (Patch -1 when not given; Minor and Patch -1 for an
// image tag that names a major alone).
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string {
	switch {
	case v.Minor < 0:
		return fmt.Sprintf("%d", v.Major)
	case v.Patch < 0:
		return fmt.Sprintf("%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

var (
	// tagVersion is the version at the start of an image tag: "9.1.2", "v9.0.1", "8.1-alpine",
	// "8", "8-alpine3.21" (8: what follows the version is no part of it).
	tagVersion   = regexp.MustCompile(`^v?([0-9]+)(?:\.([0-9]+)(?:\.([0-9]+))?)?(?:$|[^0-9.])`)
	exactVersion = regexp.MustCompile(`^([0-9]+)\.([0-9]+)(?:\.([0-9]+))?$`)
)

// ParseVersion reads "9.1.2" or "8.1" (as valkey_version reports it).
func ParseVersion(s string) (Version, bool) {
	m := exactVersion.FindStringSubmatch(s)
	if m == nil {
		return Version{}, false
	}
	return versionOf(m), true
}

// ImageVersion is the Valkey version an image's tag names at its start
// ("valkey/valkey:8.1.8-alpine", "valkey/valkey:9.1"; "valkey/valkey:8" and
// "valkey/valkey:8-alpine" name the major 8 alone, Minor -1); false when the tag names none
// ("latest", no tag, a digest alone).
func ImageVersion(image string) (Version, bool) {
	image, _, _ = strings.Cut(image, "@")
	i := strings.LastIndex(image, ":")
	if i < 0 || strings.Contains(image[i:], "/") {
		return Version{}, false
	}
	m := tagVersion.FindStringSubmatch(image[i+1:])
	if m == nil {
		return Version{}, false
	}
	return versionOf(m), true
}

// versionOf reads a match of major, minor and patch (the last two may be empty: -1).
func versionOf(m []string) Version {
	v := Version{Minor: -1, Patch: -1}
	v.Major, _ = strconv.Atoi(m[1])
	if m[2] != "" {
		v.Minor, _ = strconv.Atoi(m[2])
	}
	if m[3] != "" {
		v.Patch, _ = strconv.Atoi(m[3])
	}
	return v
}

// directiveFiles are the config names each Valkey release line reports (CONFIG GET *),
// written from the real servers: internal/valkeyconf/realserver checks them.
//
//go:embed directives/*.txt
var directiveFiles embed.FS

// directives maps "major.minor" to the config names of that release line.
var directives = loadDirectives()

func loadDirectives() map[string]map[string]bool {
	out := map[string]map[string]bool{}
	entries, _ := directiveFiles.ReadDir("directives")
	for _, e := range entries {
		b, _ := directiveFiles.ReadFile("directives/" + e.Name())
		names := map[string]bool{}
		for _, line := range strings.Fields(string(b)) {
			names[line] = true
		}
		out[strings.TrimSuffix(e.Name(), ".txt")] = names
	}
	return out
}

// Directives are the config names of v's release line, nil when none is recorded.
func Directives(v Version) map[string]bool {
	return directives[fmt.Sprintf("%d.%d", v.Major, v.Minor)]
}

// NewerDirectives are the keys of config that a later release line than target brought
// and target's does not know: a server of target would refuse its config file. Nil when
// target's release line is not recorded.
func NewerDirectives(target Version, config map[string]string) []string {
	known := Directives(target)
	if known == nil {
		return nil
	}
	var out []string
	for k := range config {
		key := strings.ToLower(k)
		if !known[key] && knownAfter(target, key) {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// knownAfter tells whether a release line later than target knows key.
func knownAfter(target Version, key string) bool {
	for line, names := range directives {
		v, ok := ParseVersion(line)
		if ok && (v.Major > target.Major || v.Major == target.Major && v.Minor > target.Minor) && names[key] {
			return true
		}
	}
	return false
}
