package containerrecreate

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flotilla-dev/flotilla/nodeagent/internal/podhandler"
	kruiseappsv1alpha1 "github.com/flotilla-dev/flotilla/workloads/api/apps/v1alpha1"
)

// maxHookOutput bounds how much of a failed hook's output goes into an event.
const maxHookOutput = 256

// runPreStop runs a container's preStop handler against the container (exec) or the pod's IP (httpGet,
// tcpSocket) and waits at most timeout for it.
func (r *Reconciler) runPreStop(ctx context.Context, spec *kruiseappsv1alpha1.ContainerRecreateRequestContainer, podIP, containerID string, timeout time.Duration) error {
	h := spec.PreStop
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch {
	case h.Exec != nil:
		return r.execHook(ctx, containerID, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		return r.httpHook(ctx, h.HTTPGet, spec.Ports, podIP)
	case h.TCPSocket != nil:
		return tcpHook(ctx, h.TCPSocket, spec.Ports, podIP)
	}
	return nil
}

func (r *Reconciler) execHook(ctx context.Context, containerID string, cmd []string, timeout time.Duration) error {
	res, err := r.Runtime.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("command %q exited with %d: %s", cmd, res.ExitCode, clip(string(res.Stdout)+string(res.Stderr)))
	}
	return nil
}

func (r *Reconciler) httpHook(ctx context.Context, h *corev1.HTTPGetAction, ports []corev1.ContainerPort, podIP string) error {
	resp, err := podhandler.Get(ctx, r.HTTPClient, h, ports, podIP)
	if err != nil {
		return fmt.Errorf("preStop httpGet: %w", err)
	}
	// As for the kubelet, any answer means the hook ran.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.Body.Close()
}

func tcpHook(ctx context.Context, h *corev1.TCPSocketAction, ports []corev1.ContainerPort, podIP string) error {
	if err := podhandler.Dial(ctx, h, ports, podIP); err != nil {
		return fmt.Errorf("preStop tcpSocket: %w", err)
	}
	return nil
}

func clip(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > maxHookOutput {
		return s[:maxHookOutput] + "..."
	}
	return s
}
