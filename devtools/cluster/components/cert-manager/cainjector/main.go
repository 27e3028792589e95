// Command cainjector is a minimal cert-manager cainjector for the local control plane, built from the
// cert-manager Go module: it fills clientConfig.caBundle of Mutating- and ValidatingWebhookConfigurations
// annotated with cert-manager.io/inject-ca-from from the named Certificate's Secret.
package main

import (
	"flag"
	"fmt"
	"os"

	admissionreg "k8s.io/api/admissionregistration/v1"
	apiext "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/klog/v2"
	apireg "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"github.com/cert-manager/cert-manager/pkg/controller/cainjector"
	"github.com/cert-manager/cert-manager/pkg/util"
)

func main() {
	// --kubeconfig is controller-runtime's own flag (sigs.k8s.io/controller-runtime/pkg/client/config).
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run() error {
	ctrl.SetLogger(klog.Background())
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	// The injectors apply with the user agent's prefix as field manager ("cert-manager-cainjector").
	cfg = util.RestConfigWithUserAgent(cfg, "cainjector")
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, admissionreg.AddToScheme, apiext.AddToScheme, apireg.AddToScheme, cmapi.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return err
	}
	ctx := ctrl.SetupSignalHandler()
	err = cainjector.RegisterAllInjectors(ctx, mgr, cainjector.SetupOptions{
		EnableCertificatesDataSource: true,
		EnabledReconcilersFor: map[string]bool{
			cainjector.MutatingWebhookConfigurationName:   true,
			cainjector.ValidatingWebhookConfigurationName: true,
		},
	})
	if err != nil {
		return err
	}
	fmt.Println("cert-manager cainjector (local) running")
	return mgr.Start(ctx)
}
