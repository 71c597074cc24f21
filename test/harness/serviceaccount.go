package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ServiceAccountKubeconfig writes a kubeconfig holding a bound token of a ServiceAccount
// (valid for a day), so that a process standing in for a pod runs with exactly that
// account's RBAC. It waits up to a minute for the ServiceAccount to exist.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	kube, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	var token *authenticationv1.TokenRequest
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		token, err = kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(24 * 3600))},
		}, metav1.CreateOptions{})
		return err == nil, nil
	})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s on %s: %w", namespace, name, c.Name, err)
	}
	file := filepath.Join(c.Dir, "sa-"+namespace+"-"+name+".kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	kc.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	kc.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*kc, file); err != nil {
		return "", fmt.Errorf("writing %s: %w", file, err)
	}
	return file, nil
}
