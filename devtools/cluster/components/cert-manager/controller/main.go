// Command controller is a minimal cert-manager controller for the local control plane, built from the
// cert-manager Go module (the module proxy does not carry cert-manager's own cmd/ modules). It runs the
// controllers this project's PKI needs: Issuers and ClusterIssuers of the CA and SelfSigned kinds, the
// Certificate lifecycle (trigger, key manager, request manager, issuing, readiness, revisions) and the
// CertificateRequest approver and signers for CA and SelfSigned. No ACME, Vault or Venafi.
//
// --controllers selects them as cert-manager's own flag does. With approver-policy deciding, run it with
// --controllers=*,-certificaterequests-approver, the flag a real cert-manager needs then.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	crns := flag.String("cluster-resource-namespace", "cert-manager", "namespace of ClusterIssuer secrets")
	workers := flag.Int("workers", 2, "workers per controller")
	selected := flag.String("controllers", "*", `controllers to run: "*", "-name" (off), "name" (on)`)
	flag.Parse()
	if err := run(*kubeconfig, *crns, *workers, strings.Split(*selected, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// enabled reports whether the --controllers list runs the controller, as cert-manager's own
// EnabledControllers reads it: "*" is every one, "name" turns one on, "-name" turns one off, and a list
// of only "-name" entries implies "*".
func enabled(name string, selected []string) bool {
	on, implied := false, true
	for _, s := range selected {
		switch s = strings.TrimSpace(s); {
		case s == "-"+name:
			return false
		case strings.HasPrefix(s, "-"):
		case s == "*" || s == name:
			on, implied = true, false
		default:
			implied = false
		}
	}
	return on || implied
}

func run(kubeconfig, crns string, workers int, selected []string) error {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	ctx = logf.NewContext(ctx, klog.Background().WithName("cert-manager"))
	factory, err := controllerpkg.NewContextFactory(ctx, controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: crns},
		CertificateOptions: controllerpkg.CertificateOptions{
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	})
	if err != nil {
		return err
	}
	known := controllerpkg.Known()
	names := make([]string, 0, len(known))
	for name := range known {
		if enabled(name, selected) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	controllers := make([]controllerpkg.Interface, 0, len(names))
	for _, name := range names {
		c, err := known[name](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", name, err)
		}
		controllers = append(controllers, c)
	}
	base, err := factory.Build()
	if err != nil {
		return err
	}
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.SharedInformerFactory.Start(ctx.Done())
	for i, c := range controllers {
		go func(name string, c controllerpkg.Interface) {
			if err := c.Run(workers, ctx); err != nil {
				klog.ErrorS(err, "controller stopped", "controller", name)
			}
		}(names[i], c)
	}
	fmt.Printf("cert-manager controller (local) running: %v\n", names)
	<-ctx.Done()
	return nil
}
