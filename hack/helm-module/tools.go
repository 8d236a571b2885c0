//go:build tools

// Package helm pins the Helm v3 command used by hack/helm to lint and
// render the chart.
package helm

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
