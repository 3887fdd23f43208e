package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// maxSecretAttempts bounds the re-reads after losing a write race to
// another replica.
const maxSecretAttempts = 3

// ensureBundle returns a valid bundle from the Secret, creating or
// renewing it when needed. Replicas racing to write it converge: the loser
// of a create or update re-reads and adopts the winner's bundle.
func (m *CertManager) ensureBundle(ctx context.Context) (Bundle, error) {
	var err error
	for range maxSecretAttempts {
		var b Bundle
		b, err = m.tryEnsureBundle(ctx)
		if !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			return b, err
		}
	}
	return Bundle{}, err
}

func (m *CertManager) tryEnsureBundle(ctx context.Context) (Bundle, error) {
	secret := &corev1.Secret{}
	err := m.opts.Client.Get(ctx, m.secretKey(), secret)
	if apierrors.IsNotFound(err) {
		return m.createSecret(ctx)
	}
	if err != nil {
		return Bundle{}, fmt.Errorf("reading Secret %s: %w", m.secretKey(), err)
	}
	current := bundleFromSecret(secret)
	next, renewal, err := RenewBundle(m.opts.Clock, current, m.certConfig())
	if err != nil || renewal.Action == RenewKept {
		return current, err
	}
	setBundle(secret, next)
	logRenewal(ctx, secret, renewal)
	if err := m.opts.Client.Update(ctx, secret); err != nil {
		return Bundle{}, fmt.Errorf("updating Secret %s: %w", m.secretKey(), err)
	}
	m.recordRenewal(secret, renewal)
	return next, nil
}

func (m *CertManager) createSecret(ctx context.Context) (Bundle, error) {
	b, renewal, err := RenewBundle(m.opts.Clock, Bundle{}, m.certConfig())
	if err != nil {
		return Bundle{}, err
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: m.opts.Namespace, Name: m.opts.SecretName}}
	setBundle(secret, b)
	logRenewal(ctx, secret, renewal)
	if err := m.opts.Client.Create(ctx, secret); err != nil {
		return Bundle{}, fmt.Errorf("creating Secret %s: %w", m.secretKey(), err)
	}
	m.recordRenewal(secret, renewal)
	return b, nil
}

func (m *CertManager) secretKey() types.NamespacedName {
	return types.NamespacedName{Namespace: m.opts.Namespace, Name: m.opts.SecretName}
}

func bundleFromSecret(s *corev1.Secret) Bundle {
	return Bundle{CACert: s.Data[CACertKey], CAKey: s.Data[CAKeyKey], Cert: s.Data[CertKey], Key: s.Data[KeyKey]}
}

// setBundle writes the four keys and keeps any others.
func setBundle(s *corev1.Secret, b Bundle) {
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	s.Data[CACertKey], s.Data[CAKeyKey] = b.CACert, b.CAKey
	s.Data[CertKey], s.Data[KeyKey] = b.Cert, b.Key
}

func logRenewal(ctx context.Context, s *corev1.Secret, r Renewal) {
	logf.FromContext(ctx).Info("Storing new webhook certificates", "Secret", klog.KObj(s), "reason", string(r.Action), "cause", r.Cause)
}

func (m *CertManager) recordRenewal(s *corev1.Secret, r Renewal) {
	if m.opts.Recorder == nil {
		return
	}
	m.opts.Recorder.Eventf(s, nil, corev1.EventTypeNormal, string(r.Action), "RotateCertificates", "Stored new webhook certificates: %s", r.Cause)
}
