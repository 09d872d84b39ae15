package cluster

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
)

// ImageEnv names the environment variable that replaces the locally built
// image, e.g. REDLOCK_REDIS_IMAGE=redis:7.2 where a registry is reachable.
const ImageEnv = "REDLOCK_REDIS_IMAGE"

// imageRepo is the repository of the locally built image. Its tag is a hash
// of everything that goes into it, so a build is reused until the host's
// redis-server or one of its libraries changes.
const imageRepo = "quorumlock-chaos-redis"

// dockerfile copies the host's files into an empty image. PATH is set so
// that the command is "redis-server" whatever image runs, ours or an
// official one.
const dockerfile = `FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin
WORKDIR /data
EXPOSE 6379
CMD ["redis-server", "--protected-mode", "no"]
`

// imageRef is the image the docker backend runs.
type imageRef struct {
	Repo, Tag string
	Built     bool // false when reused or taken from ImageEnv
}

func (r imageRef) String() string { return r.Repo + ":" + r.Tag }

// ensureImage returns the image named by ImageEnv, or else the image built
// from the host's redis-server: reused when one with the same content hash
// exists, built otherwise.
func ensureImage(ctx context.Context, client *dc.Client) (imageRef, error) {
	if name := os.Getenv(ImageEnv); name != "" {
		repo, tag := splitImage(name)
		return imageRef{Repo: repo, Tag: tag}, nil
	}
	files, err := hostFiles(ctx)
	if err != nil {
		return imageRef{}, err
	}
	sum := sha256.New()
	sum.Write([]byte(dockerfile))
	for _, f := range files {
		fmt.Fprintf(sum, "%s %d\n", f.path, len(f.data))
		sum.Write(f.data)
	}
	ref := imageRef{Repo: imageRepo, Tag: hex.EncodeToString(sum.Sum(nil))[:16]}
	if _, err := client.InspectImage(ref.String()); err == nil {
		return ref, nil
	} else if !errors.Is(err, dc.ErrNoSuchImage) {
		return imageRef{}, fmt.Errorf("cluster: inspect image %s: %w", ref, err)
	}
	var ctxTar bytes.Buffer
	if err := writeContext(&ctxTar, files); err != nil {
		return imageRef{}, err
	}
	var out bytes.Buffer
	bctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	err = client.BuildImage(dc.BuildImageOptions{
		Context:        bctx,
		Name:           ref.String(),
		InputStream:    &ctxTar,
		OutputStream:   &out,
		RmTmpContainer: true,
		Labels:         map[string]string{labelSuite: "image"},
	})
	if err != nil {
		return imageRef{}, fmt.Errorf("cluster: build image %s: %w\n%s", ref, err, tail(out.String(), 800))
	}
	ref.Built = true
	return ref, nil
}

// splitImage splits "repo[:tag]", where repo may hold a registry host:port.
func splitImage(name string) (repo, tag string) {
	i := strings.LastIndex(name, ":")
	if i < 0 || strings.Contains(name[i:], "/") {
		return name, "latest"
	}
	return name[:i], name[i+1:]
}

// file is one file of the image.
type file struct {
	path string // absolute path inside the image
	mode int64
	data []byte
}

// hostFiles reads the host's redis-server, dereferenced and named
// redis-server (on Debian it is a symlink to redis-check-rdb and picks its
// mode from the name it runs under), and every shared library ldd lists,
// dereferenced, at the path the loader looks for it.
func hostFiles(ctx context.Context) ([]file, error) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, errors.New("cluster: redis-server not found on PATH; install it (apt-get install -y redis-server) or set REDIS_SERVER")
		}
	}
	data, err := os.ReadFile(bin) // follows the symlink
	if err != nil {
		return nil, fmt.Errorf("cluster: read %s: %w", bin, err)
	}
	files := []file{{path: "/usr/local/bin/redis-server", mode: 0o755, data: data}}
	libs, err := sharedLibs(ctx, bin)
	if err != nil {
		return nil, err
	}
	for _, l := range libs {
		b, err := os.ReadFile(l)
		if err != nil {
			return nil, fmt.Errorf("cluster: read %s: %w", l, err)
		}
		files = append(files, file{path: l, mode: 0o755, data: b})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	return files, nil
}

// sharedLibs runs ldd on bin and returns the absolute paths it lists.
func sharedLibs(ctx context.Context, bin string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ldd", bin).Output()
	if err != nil {
		return nil, fmt.Errorf("cluster: ldd %s: %w", bin, err)
	}
	return parseLdd(string(out))
}

// parseLdd reads ldd's output: "name => /path (addr)", "/path (addr)", or
// a virtual library without a path (linux-vdso), which is skipped.
func parseLdd(out string) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("cluster: ldd: %s", line)
		}
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		p, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(p, "/") {
			libs = append(libs, p)
		}
	}
	return libs, sc.Err()
}

// writeContext writes the build context: the Dockerfile and rootfs/.
func writeContext(buf *bytes.Buffer, files []file) error {
	tw := tar.NewWriter(buf)
	add := func(h *tar.Header, data []byte) error {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	now := time.Unix(0, 0)
	if err := add(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile)), ModTime: now}, []byte(dockerfile)); err != nil {
		return err
	}
	dirs := map[string]bool{}
	mkdir := func(d string) error {
		var chain []string
		for ; d != "/" && !dirs[d]; d = path.Dir(d) {
			chain = append(chain, d)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			dirs[chain[i]] = true
			h := &tar.Header{Name: "rootfs" + chain[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: now}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		}
		return nil
	}
	for _, d := range []string{"/data"} {
		if err := mkdir(d); err != nil {
			return err
		}
	}
	for _, f := range files {
		if err := mkdir(path.Dir(f.path)); err != nil {
			return err
		}
		h := &tar.Header{Name: "rootfs" + f.path, Mode: f.mode, Size: int64(len(f.data)), ModTime: now, Typeflag: tar.TypeReg}
		if err := add(h, f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
