package bench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/test/cluster"
	"github.com/flotilla-dev/flotilla/test/images"
	"github.com/flotilla-dev/flotilla/test/registry"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

const (
	// pullImageBytes is the image's one file: random bytes, which gzip cannot shrink.
	pullImageBytes = 10 << 20
	pullRepoTag    = "bench/pull:v1"
	// pullRounds is the timed pulls of each way; one untimed pull of each goes first.
	pullRounds = 5
	// pullRatioTarget bounds the agent's median pull over ctr's (the node agent issue).
	pullRatioTarget = 1.1
	pullTimeout     = 2 * time.Minute
	wayAgent        = "agent"
	wayCtr          = "ctr"
)

// pullImage is the image both ways pull and what must be gone from the node before each pull.
type pullImage struct {
	ref string
	// id is the image's config digest, its ID in CRI; layer and diffID its one layer's blob and uncompressed
	// digest, which, one layer deep, is also its snapshot's chain ID.
	id, layer, diffID string
}

// measurePulls pushes a 10 MiB image to a registry on loopback and pulls it into the real node's containerd,
// alternately as the node agent does (CRI ImageStatus, PullImage, ImageStatus) and with `ctr image pull`,
// removing it in between, and returns the times of the timed pulls by way.
func measurePulls(ctx context.Context, env *Env, node *cluster.RealNode) (map[string][]time.Duration, error) {
	reg, err := registry.Start(registry.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = reg.Close() }()
	img, err := pushPullImage(ctx, reg)
	if err != nil {
		return nil, err
	}
	if err := node.AllowPlainHTTP(reg.Host); err != nil {
		return nil, err
	}
	rt, err := cri.Dial(ctx, node.CRIEndpoint)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rt.Close() }()
	p := &puller{socket: node.SocketPath, registry: reg.Host, images: rt, img: img}
	times := map[string][]time.Duration{}
	for i, way := range pullOrder(pullRounds) {
		d, err := p.pull(ctx, way)
		if err != nil {
			return nil, fmt.Errorf("pull %d (%s): %w", i+1, way, err)
		}
		if i < 2 {
			env.Logf("untimed %s pull of %s: %v", way, img.ref, d.Round(time.Millisecond))
			continue
		}
		env.Logf("%s pull %d: %v", way, len(times[way])+1, d.Round(time.Millisecond))
		times[way] = append(times[way], d)
	}
	return times, nil
}

// pullOrder is one untimed pull of each way, then rounds of each alternating A B, B A, so that drift falls on
// both alike.
func pullOrder(rounds int) []string {
	order := []string{wayAgent, wayCtr}
	for i := range rounds {
		if i%2 == 0 {
			order = append(order, wayCtr, wayAgent)
		} else {
			order = append(order, wayAgent, wayCtr)
		}
	}
	return order
}

// pushPullImage builds the image, one file of random bytes, and pushes it.
func pushPullImage(ctx context.Context, reg *registry.Registry) (pullImage, error) {
	payload := make([]byte, pullImageBytes)
	_, _ = rand.NewChaCha8([32]byte{'f', 'l', 'o', 't', 'i', 'l', 'l', 'a'}).Read(payload)
	img, err := images.Build(images.Spec{Files: []images.File{{Path: "/payload", Content: payload, Mode: 0o644}}})
	if err != nil {
		return pullImage{}, err
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		return pullImage{}, fmt.Errorf("the image's layers: %d, %w", len(layers), err)
	}
	layer, err := layers[0].Digest()
	if err != nil {
		return pullImage{}, err
	}
	diffID, err := layers[0].DiffID()
	if err != nil {
		return pullImage{}, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return pullImage{}, err
	}
	if _, err := reg.Push(ctx, pullRepoTag, img); err != nil {
		return pullImage{}, err
	}
	return pullImage{ref: reg.Ref(pullRepoTag), id: id.String(), layer: layer.String(), diffID: diffID.String()}, nil
}

// puller pulls the image one way or the other into a node whose containerd listens on socket.
type puller struct {
	socket, registry string
	images           cri.Images
	img              pullImage
}

// pull removes the image, checks it is gone, and times one pull.
func (p *puller) pull(ctx context.Context, way string) (time.Duration, error) {
	if err := p.remove(ctx); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	begin := time.Now()
	var err error
	if way == wayAgent {
		err = p.agentPull(ctx)
	} else {
		_, err = p.ctr(ctx, "images", "pull", "--plain-http", p.img.ref)
	}
	d := time.Since(begin)
	if err != nil {
		return 0, err
	}
	img, err := p.images.ImageStatus(ctx, p.img.ref)
	if err != nil {
		return 0, fmt.Errorf("after the pull: %w", err)
	}
	if !img.Present {
		return 0, fmt.Errorf("after the pull the runtime does not show %s", p.img.ref)
	}
	return d, nil
}

// agentPull is the node agent's attempt at a tag of policy IfNotPresent (nodeagent/internal/imagepuller):
// ImageStatus, which finds nothing, PullImage with the sandbox annotation the agent adds, and ImageStatus
// for the ID it reports.
func (p *puller) agentPull(ctx context.Context) error {
	img, err := p.images.ImageStatus(ctx, p.img.ref)
	if err != nil {
		return fmt.Errorf("before the pull: %w", err)
	}
	if img.Present {
		return fmt.Errorf("the runtime shows %s before the pull", p.img.ref)
	}
	_, err = p.images.PullImage(ctx, cri.PullRequest{Image: p.img.ref, SandboxAnnotations: map[string]string{
		kruiseappsv1alpha1.PullingImageByAnnotation: kruiseappsv1alpha1.PullingImageByKruiseDaemon}})
	if err != nil {
		return err
	}
	_, err = p.images.ImageStatus(ctx, p.img.ref)
	return err
}

// remove deletes every name of the image in the k8s.io namespace (a CRI pull adds its digest and ID
// references) with the garbage collection done, then checks that its blobs and snapshot are gone, so that
// the next pull fetches and unpacks it all, and waits until CRI no longer shows it.
func (p *puller) remove(ctx context.Context) error {
	out, err := p.ctr(ctx, "images", "ls", "-q")
	if err != nil {
		return err
	}
	var names []string
	for _, n := range strings.Fields(string(out)) {
		if strings.HasPrefix(n, p.registry+"/") || n == p.img.id {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		if _, err := p.ctr(ctx, append([]string{"images", "rm", "--sync"}, names...)...); err != nil {
			return err
		}
	}
	if err := p.checkGone(ctx); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		img, err := p.images.ImageStatus(ctx, p.img.ref)
		return err == nil && !img.Present, nil
	})
}

func (p *puller) checkGone(ctx context.Context) error {
	content, err := p.ctr(ctx, "content", "ls", "-q")
	if err != nil {
		return err
	}
	snapshots, err := p.ctr(ctx, "snapshots", "ls")
	if err != nil {
		return err
	}
	var left []string
	for _, d := range []string{p.img.layer, p.img.id} {
		if bytes.Contains(content, []byte(d)) {
			left = append(left, "blob "+d)
		}
	}
	if bytes.Contains(snapshots, []byte(p.img.diffID)) {
		left = append(left, "snapshot "+p.img.diffID)
	}
	if len(left) > 0 {
		return fmt.Errorf("the image was removed but containerd keeps %s: the next pull would not fetch it", strings.Join(left, ", "))
	}
	return nil
}

// ctr runs ctr against the node's containerd in the kubelet's namespace.
func (p *puller) ctr(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", p.socket, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
