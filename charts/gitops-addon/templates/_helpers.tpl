{{/* The name of every object of the manager. */}}
{{- define "gitops-addon.name" -}}gitops-addon-manager{{- end }}

{{/* Labels on every object. */}}
{{- define "gitops-addon.labels" -}}
app.kubernetes.io/name: gitops-addon-manager
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gitops-addon
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* Labels that select the manager pods. */}}
{{- define "gitops-addon.selectorLabels" -}}
app.kubernetes.io/name: gitops-addon-manager
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The label that tells the metrics Service apart, for the ServiceMonitor. */}}
{{- define "gitops-addon.metricsLabels" -}}
app.kubernetes.io/component: metrics
{{- end }}

{{/* The manager image. */}}
{{- define "gitops-addon.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}
