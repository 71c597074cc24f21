package argocd

// Apps are the applications of the local fleet's Git repository (path -> file), made of
// kinds that become Healthy without a kubelet:
//   - guestbook: a ConfigMap, a Secret and a Service, all in the allowlist of
//     argocd-platform-extensions;
//   - priority: a PriorityClass (scheduling.k8s.io), a group outside that allowlist,
//     which only syncs once a user adds the group to extraAPIGroups.
var Apps = map[string]string{
	"guestbook/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: guestbook-ui}
data: {title: "Guestbook", color: blue}
`,
	"guestbook/secret.yaml": `apiVersion: v1
kind: Secret
metadata: {name: guestbook-db}
stringData: {password: not-a-real-password}
`,
	"guestbook/service.yaml": `apiVersion: v1
kind: Service
metadata: {name: guestbook-ui}
spec:
  ports: [{port: 80, targetPort: 8080}]
  selector: {app: guestbook-ui}
`,
	"priority/priorityclass.yaml": `apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: team-critical}
value: 100000
description: "Synced by Argo CD from the local fleet's repository"
`,
}
