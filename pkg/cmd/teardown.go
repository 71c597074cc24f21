package cmd

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gitops-addon/gitops-addon/pkg/contract"
	"github.com/gitops-addon/gitops-addon/pkg/spoke/teardown"
)

func newSpokeTeardownCommand() *cobra.Command {
	o := teardown.Options{Namespace: contract.GitOpsNamespace, Name: contract.ArgoCDName, RecordNamespace: os.Getenv("POD_NAMESPACE")}
	var kubeconfig string
	c := &cobra.Command{
		Use:   "spoke-teardown",
		Short: "Remove the Argo CD instance gitops-addon delivered to this spoke while the GitOps operator can still finalize it",
		Long: "spoke-teardown is the addon's pre-delete hook: OCM runs it as a Job on the spoke when the cluster's\n" +
			"ManagedClusterAddOn is deleted, before it removes the GitOps operator. It deletes the ArgoCD instance (only\n" +
			"gitops-addon's: the one whose UID the agent's creation record holds; labels prove nothing) and waits until\n" +
			"the operator has finalized it, then the argocd-agent client\n" +
			"certificate gitops-addon kept there in Argo CD Agent mode; before that it waits (at most\n" +
			"--drain-timeout) for the Applications being deleted in the namespace, which only this Argo CD can prune.\n" +
			"It never deletes CRDs or Applications. On timeout it exits non-zero with the finalizers still pending, and the Job retries.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return err
			}
			// Unstructured for the Argo CD kinds; client-go's for the Secret it removes.
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			cl, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return err
			}
			log := ctrl.Log.WithName("spoke-teardown")
			o.Logf = func(format string, args ...any) { log.Info(fmt.Sprintf(format, args...)) }
			return teardown.Run(c.Context(), cl, o)
		},
	}
	f := c.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "spoke kubeconfig file; empty uses $KUBECONFIG or the in-cluster config")
	f.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the ArgoCD instance")
	f.StringVar(&o.Name, "name", o.Name, "name of the ArgoCD instance")
	f.StringVar(&o.RecordNamespace, "record-namespace", o.RecordNamespace,
		"the agent's namespace, where the creation record "+contract.CreationRecordConfigMap+" says which instance gitops-addon created (default $POD_NAMESPACE)")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long to wait for the GitOps operator to finalize the instance")
	f.DurationVar(&o.DrainTimeout, "drain-timeout", 2*time.Minute, "how long the instance waits first for the Applications being deleted in its namespace "+
		"(pruned by it); 0 does not wait")
	return c
}
