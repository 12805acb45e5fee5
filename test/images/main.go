// Command imagepack writes a single-layer container image as a docker-archive tarball that
// `ctr images import` accepts, from files of this machine; no Docker engine, no registry.
//
//	imagepack -out valkey.tar -tag valkey.local/valkey:dev -entrypoint /usr/bin/valkey-server \
//	  -user 1000:1000 -passwd valkey:1000:1000:/data \
//	  /usr/bin/redis-server=/usr/bin/redis-server libs:/usr/bin/redis-server \
//	  link:/usr/bin/valkey-server=redis-server dir:/data:1000:1000:0775
//
// Items:
//
//	SRC=DST                 copy the host file SRC (symlinks followed) to DST, keeping its mode
//	libs:SRC                the shared libraries and loader `ldd SRC` lists, at the paths it lists
//	link:DST=TARGET         a symbolic link
//	dir:DST[:UID:GID[:MODE]] a folder (MODE in octal, default 0755)
//
// Parent folders are added as root-owned 0755. The result is reproducible: fixed times, sorted
// entries.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

type entry struct {
	typ      byte
	src      string // host file for regular files
	target   string // for links
	mode     int64
	uid, gid int
}

var epoch = time.Unix(946684800, 0) // 2000-01-01: fixed, so images are reproducible

func main() {
	var c imageConfig
	out := flag.String("out", "", "tarball to write")
	tag := flag.String("tag", "", "image reference, e.g. valkey.local/valkey:dev")
	flag.StringVar(&c.entrypoint, "entrypoint", "", "entrypoint (space separated)")
	flag.StringVar(&c.cmd, "cmd", "", "default arguments (space separated)")
	flag.StringVar(&c.user, "user", "", "user:group the image runs as")
	flag.StringVar(&c.workdir, "workdir", "/", "working folder")
	flag.StringVar(&c.passwd, "passwd", "", "name:uid:gid:home of a user for /etc/passwd and /etc/group (root is always there)")
	flag.StringVar(&c.stopSignal, "stopsignal", "", "signal the runtime stops a container with (default SIGTERM), e.g. SIGINT")
	flag.Var(&c.env, "env", "KEY=VALUE (repeatable)")
	flag.Var(&c.expose, "expose", "port/proto (repeatable)")
	flag.Parse()
	if *out == "" || *tag == "" || c.entrypoint == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *tag, c, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "imagepack:", err)
		os.Exit(1)
	}
}

// imageConfig is what the image's config holds besides its layer.
type imageConfig struct {
	entrypoint, cmd, user, workdir, passwd, stopSignal string
	env, expose                                        list
}

func run(out, tag string, c imageConfig, items []string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	files := map[string]*entry{}
	extra := map[string][]byte{}
	for _, it := range items {
		if err := add(files, it); err != nil {
			return fmt.Errorf("%s: %w", it, err)
		}
	}
	if c.passwd != "" {
		p := strings.Split(c.passwd, ":")
		if len(p) != 4 {
			return fmt.Errorf("-passwd wants name:uid:gid:home, got %q", c.passwd)
		}
		extra["/etc/passwd"] = fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\n%s:x:%s:%s:%s:%s:/sbin/nologin\n", p[0], p[1], p[2], p[0], p[3])
		extra["/etc/group"] = fmt.Appendf(nil, "root:x:0:\n%s:x:%s:\n", p[0], p[2])
		files["/etc/passwd"] = &entry{typ: tar.TypeReg, mode: 0o644}
		files["/etc/group"] = &entry{typ: tar.TypeReg, mode: 0o644}
	}
	layerTar, err := writeTar(files, extra)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = strings.Fields(c.entrypoint)
	cf.Config.Cmd = strings.Fields(c.cmd)
	cf.Config.User = c.user
	cf.Config.WorkingDir = c.workdir
	cf.Config.StopSignal = c.stopSignal
	cf.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin"}, c.env...)
	if len(c.expose) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range c.expose {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func add(files map[string]*entry, it string) error {
	switch {
	case strings.HasPrefix(it, "libs:"):
		libs, err := ldd(strings.TrimPrefix(it, "libs:"))
		if err != nil {
			return err
		}
		for _, l := range libs {
			if err := addFile(files, l, l); err != nil {
				return err
			}
		}
	case strings.HasPrefix(it, "link:"):
		dst, target, ok := strings.Cut(strings.TrimPrefix(it, "link:"), "=")
		if !ok {
			return fmt.Errorf("want link:DST=TARGET")
		}
		files[path.Clean(dst)] = &entry{typ: tar.TypeSymlink, target: target, mode: 0o777}
	case strings.HasPrefix(it, "dir:"):
		p := strings.Split(strings.TrimPrefix(it, "dir:"), ":")
		e := &entry{typ: tar.TypeDir, mode: 0o755}
		var err error
		if len(p) >= 3 {
			if e.uid, err = strconv.Atoi(p[1]); err != nil {
				return err
			}
			if e.gid, err = strconv.Atoi(p[2]); err != nil {
				return err
			}
		}
		if len(p) >= 4 {
			if e.mode, err = strconv.ParseInt(p[3], 8, 32); err != nil {
				return err
			}
		}
		files[path.Clean(p[0])] = e
	default:
		src, dst, ok := strings.Cut(it, "=")
		if !ok {
			return fmt.Errorf("want SRC=DST")
		}
		return addFile(files, src, dst)
	}
	return nil
}

func addFile(files map[string]*entry, src, dst string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	files[path.Clean(dst)] = &entry{typ: tar.TypeReg, src: src, mode: int64(st.Mode().Perm())}
	return nil
}

// ldd lists the loader and shared libraries a dynamic executable needs.
func ldd(bin string) ([]string, error) {
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "not a dynamic executable") {
			return nil, nil
		}
		return nil, fmt.Errorf("ldd %s: %w: %s", bin, err, out)
	}
	var libs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			libs = append(libs, f[2])
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			libs = append(libs, f[0])
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("ldd %s: %s is not found", bin, f[0])
		}
	}
	return libs, nil
}

func writeTar(files map[string]*entry, extra map[string][]byte) ([]byte, error) {
	// Parent folders.
	for p := range files {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := files[d]; !ok {
				files[d] = &entry{typ: tar.TypeDir, mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := files[p]
		h := &tar.Header{
			Typeflag: e.typ, Name: strings.TrimPrefix(p, "/"), Mode: e.mode,
			Uid: e.uid, Gid: e.gid, ModTime: epoch, Format: tar.FormatPAX,
		}
		var data []byte
		switch e.typ {
		case tar.TypeDir:
			h.Name += "/"
		case tar.TypeSymlink:
			h.Linkname = e.target
		case tar.TypeReg:
			if b, ok := extra[p]; ok {
				data = b
			} else {
				b, err := os.ReadFile(filepath.Clean(e.src))
				if err != nil {
					return nil, err
				}
				data = b
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
