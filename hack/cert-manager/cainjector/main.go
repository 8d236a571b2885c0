// Command cainjector is cert-manager's CA injector for hack/cluster, built
// from the pinned github.com/cert-manager/cert-manager module (upstream's
// cmd/cainjector is an unpublished module of its own). It registers the same
// injectors as upstream: an APIService, webhook configuration or CRD annotated
// cert-manager.io/inject-ca-from gets the named Certificate's CA in its
// caBundle. It runs out of cluster with a kubeconfig, as one replica.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmscheme "github.com/cert-manager/cert-manager/pkg/client/clientset/versioned/scheme"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	// controller-runtime registers --kubeconfig on the global flag set.
	flag.Parse()
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	if kubeconfig == "" {
		fmt.Fprintln(os.Stderr, "cainjector: --kubeconfig is required")
		os.Exit(2)
	}

	logf.InitLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "cainjector")
	ctrl.SetLogger(logf.Log)
	if err := run(ctx, kubeconfig); err != nil {
		fmt.Fprintf(os.Stderr, "cainjector: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.UserAgent = "cainjector"

	scheme := runtime.NewScheme()
	utilruntime.Must(kscheme.AddToScheme(scheme))
	utilruntime.Must(cmscheme.AddToScheme(scheme))
	utilruntime.Must(apiext.AddToScheme(scheme))
	utilruntime.Must(apireg.AddToScheme(scheme))

	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme: scheme,
		Cache:  cache.Options{ReaderFailOnMissingInformer: true},
		// Secrets are read directly, as upstream does, so no cache of every
		// Secret of the cluster is built.
		Client:  client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Metrics: metricsserver.Options{BindAddress: "0"},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
			cainjector.APIServiceName:                     true,
			cainjector.CustomResourceDefinitionName:       true,
		},
	}); err != nil {
		return fmt.Errorf("registering injectors: %w", err)
	}
	return mgr.Start(ctx)
}
