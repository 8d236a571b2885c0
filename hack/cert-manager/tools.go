//go:build tools

// Package certmanager pins the cert-manager module whose controllers
// hack/cert-manager builds (controller/, cainjector/) and whose CRDs
// (deploy/crds) hack/lib/certmanager.sh applies.
package certmanager

import _ "github.com/cert-manager/cert-manager/pkg/controller"
