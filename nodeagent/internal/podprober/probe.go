package podprober

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/cri"
	"github.com/flotilla-dev/flotilla/nodeagent/internal/podhandler"
)

// maxMessage bounds what a probe's output leaves in the status, as the kubelet bounds its probes' output.
const maxMessage = 1024

// Prober runs one probe once.
type Prober struct {
	Runtime cri.Runtime
	// HTTP sends httpGet probes (podhandler.NewHTTPClient).
	HTTP *http.Client
}

// Run probes t once within timeout: exec through the runtime, httpGet and tcpSocket against the pod's IP.
func (p Prober) Run(ctx context.Context, t Target, timeout time.Duration) Outcome {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	h := t.Probe.ProbeHandler
	switch {
	case h.Exec != nil:
		return p.exec(ctx, t, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return p.httpGet(ctx, t, h.HTTPGet)
	case h.TCPSocket != nil:
		return tcpSocket(ctx, t, h.TCPSocket)
	default:
		return Outcome{Message: "the probe has no exec, httpGet or tcpSocket handler"}
	}
}

// exec runs the command in the newest running container of the probe's name; exit code 0 passes.
func (p Prober) exec(ctx context.Context, t Target, cmd []string, timeout time.Duration) Outcome {
	id, err := p.container(ctx, t)
	if err != nil {
		return Outcome{Message: err.Error()}
	}
	res, err := p.Runtime.ExecSync(ctx, id, cmd, timeout)
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return Outcome{Message: fmt.Sprintf("command timed out after %s", timeout)}
	case err != nil:
		return Outcome{Message: err.Error()}
	}
	out := clip(string(bytes.TrimSpace(append(res.Stdout, res.Stderr...))))
	if res.ExitCode != 0 {
		return Outcome{Message: fmt.Sprintf("command exited with code %d: %s", res.ExitCode, out)}
	}
	return Outcome{Passed: true, Message: out}
}

// container is the ID of the running container the probe names.
func (p Prober) container(ctx context.Context, t Target) (string, error) {
	list, err := p.Runtime.ListContainers(ctx, map[string]string{cri.LabelPodUID: t.PodUID, cri.LabelContainerName: t.Container})
	if err != nil {
		return "", err
	}
	var newest *cri.Container
	for i := range list {
		if c := &list[i]; c.State == cri.StateRunning && (newest == nil || c.CreatedAt.After(newest.CreatedAt)) {
			newest = c
		}
	}
	if newest == nil {
		return "", fmt.Errorf("container %s of pod %s/%s is not running", t.Container, t.Namespace, t.Pod)
	}
	return newest.ID, nil
}

// httpGet passes on a status from 200 to 399, as the kubelet's. A named port was resolved by the manager.
func (p Prober) httpGet(ctx context.Context, t Target, g *corev1.HTTPGetAction) Outcome {
	resp, err := podhandler.Get(ctx, p.HTTP, g, nil, t.IP)
	if err != nil {
		return Outcome{Message: clip(err.Error())}
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxMessage))
	msg := clip(fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(body)))
	return Outcome{Passed: resp.StatusCode >= http.StatusOK && resp.StatusCode < http.StatusBadRequest, Message: msg}
}

// tcpSocket passes when a connection opens.
func tcpSocket(ctx context.Context, t Target, s *corev1.TCPSocketAction) Outcome {
	if err := podhandler.Dial(ctx, s, nil, t.IP); err != nil {
		return Outcome{Message: clip(err.Error())}
	}
	return Outcome{Passed: true}
}

func clip(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage]
}
