{{/*
Labels carried by every object of the chart. The hub and the agent filter their caches
on app.kubernetes.io/managed-by, so an object without it is invisible to them.
*/}}
{{- define "gitops-addon.labels" -}}
app.kubernetes.io/managed-by: gitops-addon
app.kubernetes.io/part-of: gitops-addon
{{- end }}

{{/*
The spoke agent image: the hub's choice, else the release image of this chart's
appVersion (pkg/version.ImageRepository; test/chart checks that they agree).
*/}}
{{- define "gitops-addon.agentImage" -}}
{{- .Values.global.imageOverrides.gitopsAddonAgent | default (printf "ghcr.io/gitops-addon/gitops-addon:%s" .Chart.AppVersion) -}}
{{- end }}

{{/*
The GitOps operator image: the hub's choice when it made one, else the default image
of the cluster's flavour.
*/}}
{{- define "gitops-addon.operatorImage" -}}
{{- if .Values.global.imageOverrides.gitopsOperator -}}
{{- .Values.global.imageOverrides.gitopsOperator -}}
{{- else if .Values.openshift -}}
{{- .Values.gitopsOperator.images.openshift -}}
{{- else -}}
{{- .Values.gitopsOperator.images.kubernetes -}}
{{- end -}}
{{- end }}

{{/*
Proxy environment variables from global.proxyConfig (AddOnDeploymentConfig), one per
variable that is set. Call with the root context.
*/}}
{{- define "gitops-addon.proxyEnv" -}}
{{- $proxy := .Values.global.proxyConfig | default dict }}
{{- range $name := list "HTTP_PROXY" "HTTPS_PROXY" "NO_PROXY" }}
{{- with index $proxy $name }}
- name: {{ $name }}
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Resources of one container: the last global.resourceRequirements entry whose
containerIDRegex matches "deployments:<deployment>:<container>" (the addon framework's
convention), else the given defaults.
Call with (dict "root" $ "deployment" <name> "container" <name> "defaults" <dict>).
*/}}
{{- define "gitops-addon.resources" -}}
{{- $containerID := printf "deployments:%s:%s" .deployment .container }}
{{- $resources := .defaults }}
{{- range $requirement := .root.Values.global.resourceRequirements | default list }}
{{- if regexMatch $requirement.containerIDRegex $containerID }}
{{- $resources = $requirement.resources }}
{{- end }}
{{- end }}
{{- toYaml $resources }}
{{- end }}

{{/*
Pod-level scheduling and pull settings shared by the agent and the operator.
Call with the root context; renders at the indentation of a pod spec's fields.
*/}}
{{- define "gitops-addon.podPlacement" -}}
{{- with .Values.global.imagePullSecret }}
imagePullSecrets:
- name: {{ . | quote }}
{{- end }}
{{- with .Values.global.nodeSelector }}
nodeSelector:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
{{- toYaml . | nindent 0 }}
{{- end }}
{{- end }}

{{/*
Pod security context: non-root with the runtime's default seccomp profile, which the
restricted Pod Security Standard requires.
*/}}
{{- define "gitops-addon.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Container security context for the restricted Pod Security Standard.
*/}}
{{- define "gitops-addon.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop:
  - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
Splits an image reference into the repository and tag-or-digest that the ArgoCD CR
wants in separate fields (the operator joins them again, with "@" when the second part
holds a ':' as digests do). Returns YAML {repository, tag}; tag is empty when the
reference has neither. A ':' only counts as a tag separator after the last '/', so a
registry port ("host:5000/repo") is not mistaken for a tag.
*/}}
{{- define "gitops-addon.splitImage" -}}
{{- $repository := . }}
{{- $tag := "" }}
{{- if contains "@" . }}
{{- $parts := splitn "@" 2 . }}
{{- $repository = $parts._0 }}
{{- $tag = $parts._1 }}
{{- else }}
{{- $lastSegment := last (splitList "/" .) }}
{{- if contains ":" $lastSegment }}
{{- $tag = last (splitList ":" $lastSegment) }}
{{- $repository = trimSuffix (printf ":%s" $tag) . }}
{{- end }}
{{- end }}
repository: {{ $repository | quote }}
tag: {{ $tag | quote }}
{{- end }}

{{/*
The CustomResourceDefinitions the spoke agent installs from copies in its binary
(pkg/spoke/crdinstall/crds): the only CRDs its ClusterRole lets it change and its
admission policy lets it create or update. A test keeps this list equal to the embedded set.
*/}}
{{- define "gitops-addon.agentCRDNames" -}}
- applications.argoproj.io
- applicationsets.argoproj.io
- appprojects.argoproj.io
- argocdexports.argoproj.io
- argocds.argoproj.io
- imageupdaters.argocd-image-updater.argoproj.io
- namespacemanagements.argoproj.io
- notificationsconfigurations.argoproj.io
- routes.route.openshift.io
{{- end }}

{{/* The verbs of a controller that manages objects: never "*", which would also grant
impersonate, escalate and bind where they apply. */}}
{{- define "gitops-addon.syncVerbs" -}}
[get, list, watch, create, update, patch, delete]
{{- end }}

{{/*
gitops-addon.managedKinds: the kinds the spoke Argo CD may manage, one rule per API group,
with the verbs given. Stated once for the two roles that must agree on them:
argocd-platform-extensions grants them with the sync verbs; in Argo CD Agent mode,
argocd-agent's live-resources role reads them (get), Secrets left out.
Called with (dict "verbs" <a YAML list> "secrets" <bool>).
*/}}
{{- define "gitops-addon.managedKinds" -}}
# Application configuration, service exposure, storage claims and namespace quotas.
- apiGroups: [""]
  resources:
  - configmaps
  {{- if .secrets }}
  - secrets
  {{- end }}
  - services
  - serviceaccounts
  - namespaces
  - persistentvolumeclaims
  - limitranges
  - resourcequotas
  verbs: {{ .verbs }}
# Workload controllers.
- apiGroups: [apps]
  resources: [deployments, statefulsets, daemonsets, replicasets]
  verbs: {{ .verbs }}
- apiGroups: [batch]
  resources: [jobs, cronjobs]
  verbs: {{ .verbs }}
- apiGroups: [networking.k8s.io]
  resources: [ingresses, networkpolicies, ingressclasses]
  verbs: {{ .verbs }}
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: {{ .verbs }}
- apiGroups: [autoscaling]
  resources: [horizontalpodautoscalers]
  verbs: {{ .verbs }}
# App-of-apps: Argo CD managing its own Applications, ApplicationSets and projects.
- apiGroups: [argoproj.io]
  resources: [applications, applicationsets, appprojects]
  verbs: {{ .verbs }}
- apiGroups: [route.openshift.io]
  resources: [routes]
  verbs: {{ .verbs }}
- apiGroups: [monitoring.coreos.com]
  resources: [servicemonitors, podmonitors, prometheusrules]
  verbs: {{ .verbs }}
{{- end }}

{{/*
"true" when the managed cluster serves admissionregistration.k8s.io/v1
ValidatingAdmissionPolicy (GA in Kubernetes 1.30). The addon framework renders with the
Kubernetes version the cluster reports in its ManagedCluster status; before that is known
the cluster counts as a current one. On older clusters the policy is left out (a manifest
of a kind the spoke does not serve would fail the whole ManifestWork) and the agent says
so on its ArgoCDCRDsInstalled condition.
*/}}
{{- define "gitops-addon.servesAdmissionPolicyV1" -}}
{{- if semverCompare ">=1.30.0-0" (.Capabilities.KubeVersion.Version | default "v1.30.0") }}true{{ end -}}
{{- end }}

{{/*
gitops-addon.stack is what the hub ships beside the agent (values.yaml, stack), checked.
*/}}
{{- define "gitops-addon.stack" -}}
{{- $stack := .Values.stack | default "full" -}}
{{- if not (has $stack (list "full" "agentOnly" "useExisting")) -}}
{{- fail (printf "stack %q: want full, agentOnly or useExisting" $stack) -}}
{{- end -}}
{{- $stack -}}
{{- end }}
