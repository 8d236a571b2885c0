// Command controller is cert-manager's controller for hack/cluster, built from
// the pinned github.com/cert-manager/cert-manager module. Upstream's
// cmd/controller is a module of its own that replaces the root module by a
// relative path and is not published, so this wrapper starts the same
// registered control loops (the Certificate controllers, the Issuer and
// ClusterIssuer controllers, the CertificateRequest approver and the CA and
// self-signed signers) with its own small flag set. It runs out of cluster
// with a kubeconfig, as one replica (no leader election).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// enabled are the control loops a CA or self-signed Issuer needs.
var enabled = []string{
	issuers.ControllerName,
	clusterissuers.ControllerName,
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	trigger.ControllerName,
	issuing.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster (required)")
	clusterResourceNamespace := flag.String("cluster-resource-namespace", "cert-manager", "namespace of the Secrets ClusterIssuers refer to")
	workers := flag.Int("concurrent-workers", 2, "workers per control loop")
	backoff := flag.Duration("certificate-request-minimum-backoff", 10*time.Second, "first delay after a failed CertificateRequest")
	flag.Parse()
	if *kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "controller: --kubeconfig is required")
		os.Exit(2)
	}

	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, *kubeconfig, *clusterResourceNamespace, *workers, *backoff); err != nil {
		fmt.Fprintf(os.Stderr, "controller: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, clusterResourceNamespace string, workers int, backoff time.Duration) error {
	factory, err := controller.NewContextFactory(ctx, controller.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		IssuerOptions:      controller.IssuerOptions{ClusterResourceNamespace: clusterResourceNamespace},
		CertificateOptions: controller.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: backoff,
			CertificateRequestMaximumBackoffDuration: 8 * backoff,
		},
	})
	if err != nil {
		return err
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}

	known := controller.Known()
	names := append([]string(nil), enabled...)
	sort.Strings(names)
	g, gctx := errgroup.WithContext(ctx)
	for _, name := range names {
		construct, ok := known[name]
		if !ok {
			return fmt.Errorf("control loop %q is not registered in this cert-manager module", name)
		}
		loop, err := construct(factory)
		if err != nil {
			return fmt.Errorf("control loop %s: %w", name, err)
		}
		logf.FromContext(ctx).Info("starting control loop", "controller", name)
		g.Go(func() error { return loop.Run(workers, gctx) })
	}
	base.SharedInformerFactory.Start(gctx.Done())
	base.KubeSharedInformerFactory.Start(gctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(gctx.Done())

	err = g.Wait()
	base.HTTP01ResourceMetadataInformersFactory.Shutdown()
	base.KubeSharedInformerFactory.Shutdown()
	base.SharedInformerFactory.Shutdown()
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
