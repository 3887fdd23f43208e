package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
)

// Annotations exec reads on the pod.
const (
	// workingHotUpgradeAnnotation maps a hot-upgrade sidecar to the pod container doing its work.
	workingHotUpgradeAnnotation = "kruise.io/sidecarset-working-hotupgrade-container"
	// defaultContainerAnnotation is kubectl's: the container exec picks without -c.
	defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"
)

// execOptions are the flags of exec, upstream's.
type execOptions struct {
	container, sidecar string
	stdin, tty         bool
}

// newExecCommand is upstream's exec: kubectl exec, where -S names a SidecarSet sidecar and picks the container
// that does its work (of a hot-upgrade sidecar's two, the one the pod records as working).
func newExecCommand(a *app) *cobra.Command {
	o := &execOptions{}
	cmd := &cobra.Command{
		Use:   "exec (POD | pod/NAME) [-c CONTAINER] [-S SIDECAR] [flags] -- COMMAND [args...]",
		Short: "Execute a command in a container, or in the working container of a SidecarSet sidecar",
		Example: `  # Run 'date' in the working container of the hot-upgrade sidecar "envoy" of pod mypod
  kubectl kruise exec mypod -S envoy -- date`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			at := cmd.ArgsLenAtDash()
			if at != 1 {
				return errors.New("give one pod, then -- and the command: exec POD -- COMMAND [args...]")
			}
			return a.exec(cmd.Context(), o, strings.TrimPrefix(args[0], "pod/"), args[1:])
		},
	}
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "Container name; without it (and without -S) the pod's default container")
	cmd.Flags().StringVarP(&o.sidecar, "sidecar", "S", "", "SidecarSet sidecar name: of a hot-upgrade sidecar, the working container is chosen")
	cmd.Flags().BoolVarP(&o.stdin, "stdin", "i", false, "Pass stdin to the container")
	cmd.Flags().BoolVarP(&o.tty, "tty", "t", false, "Stdin is a TTY")
	return cmd
}

// exec runs command in the chosen container of pod and ends with the command's exit code.
func (a *app) exec(ctx context.Context, o *execOptions, pod string, command []string) error {
	if len(command) == 0 {
		return errors.New("you must specify at least one command for the container")
	}
	cfg, err := a.flags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("loading the client configuration: %w", err)
	}
	ns, _, err := a.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("reading the namespace: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating the client: %w", err)
	}
	p, err := client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	container, note, err := execContainer(p, o.container, o.sidecar)
	if err != nil {
		return err
	}
	if note != "" {
		fmt.Fprintln(a.streams.ErrOut, note)
	}
	req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdin: o.stdin, Stdout: true,
			Stderr: !o.tty, TTY: o.tty}, scheme.ParameterCodec)
	executor, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	return execExitCode(a.stream(ctx, executor, o))
}

// stream connects the streams, stdin in raw mode when it is a terminal and -t asks for one.
func (a *app) stream(ctx context.Context, executor remotecommand.Executor, o *execOptions) error {
	opts := remotecommand.StreamOptions{Stdout: a.streams.Out, Stderr: a.streams.ErrOut, Tty: o.tty}
	if o.stdin {
		opts.Stdin = a.streams.In
	}
	if o.tty {
		opts.Stderr = nil // a TTY carries both outputs
		if f, ok := a.streams.In.(*os.File); ok && o.stdin && term.IsTerminal(int(f.Fd())) {
			state, err := term.MakeRaw(int(f.Fd()))
			if err != nil {
				return err
			}
			defer func() { _ = term.Restore(int(f.Fd()), state) }()
		}
	}
	return executor.StreamWithContext(ctx, opts)
}

// execExitCode ends the plugin with the remote command's exit code, as kubectl exec does.
func execExitCode(err error) error {
	var exit utilexec.CodeExitError
	if errors.As(err, &exit) {
		return withCode(exit.Code, nil)
	}
	return err
}

// execContainer picks the container to run in: with -S, the working container the pod records for that
// sidecar (or the container of that name, for a sidecar upgraded cold); else -c; else kubectl's default
// container annotation, else the first container. note tells the user which one, when it was not named.
func execContainer(pod *corev1.Pod, container, sidecar string) (name, note string, err error) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return "", "", fmt.Errorf("cannot exec into a container in a completed pod; current phase is %s", pod.Status.Phase)
	}
	if sidecar != "" {
		working := map[string]string{}
		_ = json.Unmarshal([]byte(pod.Annotations[workingHotUpgradeAnnotation]), &working) // unreadable: none recorded
		if c, ok := working[sidecar]; ok {
			return c, fmt.Sprintf("Enter working container %s of SidecarSet.", c), nil
		}
		if hasContainer(pod, sidecar) {
			return sidecar, "", nil
		}
		return "", "", fmt.Errorf("pod %s has no sidecar %s", pod.Name, sidecar)
	}
	if container != "" {
		return container, "", nil
	}
	if c := pod.Annotations[defaultContainerAnnotation]; c != "" && hasContainer(pod, c) {
		return c, "", nil
	}
	if len(pod.Spec.Containers) == 0 {
		return "", "", fmt.Errorf("pod %s has no containers", pod.Name)
	}
	first := pod.Spec.Containers[0].Name
	if len(pod.Spec.Containers) > 1 {
		note = fmt.Sprintf("Defaulted container %q out of: %s.", first, containerList(pod))
	}
	return first, note, nil
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

func containerList(pod *corev1.Pod) string {
	names := make([]string, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
