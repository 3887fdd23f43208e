package cluster

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

const controllerNamespace = "flotilla-system"

// ControllerUser is the identity of ControllerKubeconfig: the user name and groups the API server gives the
// service account flotilla-manager of flotilla-system, so that API Priority and Fairness files its requests
// where a cluster files an installed controller's (priority level workload-low), not with system:masters'
// (exempt), whose bursts go ahead of kube-scheduler's and kube-controller-manager's.
const ControllerUser = "system:serviceaccount:" + controllerNamespace + ":flotilla-manager"

// ControllerKubeconfig writes a kubeconfig for ControllerUser, bound to cluster-admin, and returns its path.
func (c *Cluster) ControllerKubeconfig(ctx context.Context) (string, error) {
	kube, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return "", err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flotilla-test-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: ControllerUser}},
	}
	if _, err := kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("binding %s to cluster-admin: %w", ControllerUser, err)
	}
	return writeKubeconfig(c.dir, "controller", restConfig(c.config.Host, c.pki.ca, c.pki.controller))
}
