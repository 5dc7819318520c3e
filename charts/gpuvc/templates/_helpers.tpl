{{/*
Names are fixed: gpuvc is installed once per cluster, and the manager finds its webhook
configurations (gpuvc-syncer) and serving Secret (gpuvc-webhook-tls) by name.
*/}}

{{- define "gpuvc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: gpuvc
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpuvc
{{- end }}

{{/* Selector labels of one component ("manager" or "agent"). */}}
{{- define "gpuvc.selectorLabels" -}}
app.kubernetes.io/name: gpuvc
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "gpuvc.componentLabels" -}}
{{ include "gpuvc.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The gpuvc image: repository@digest, or repository:tag (default appVersion). */}}
{{- define "gpuvc.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{- define "gpuvc.managerServiceAccount" -}}gpuvc-manager{{- end }}
{{- define "gpuvc.agentServiceAccount" -}}gpuvc-agent{{- end }}
{{- define "gpuvc.webhookService" -}}gpuvc-webhook{{- end }}
{{- define "gpuvc.webhookConfiguration" -}}gpuvc-syncer{{- end }}
{{- define "gpuvc.webhookSecret" -}}gpuvc-webhook-tls{{- end }}
{{- define "gpuvc.webhookCertificate" -}}gpuvc-webhook{{- end }}
{{- define "gpuvc.webhookCertDir" -}}/tmp/k8s-webhook-server/serving-certs{{- end }}
{{- define "gpuvc.leaderElectionID" -}}gpuvc-manager.gpuvc.dev{{- end }}

{{/* Restricted-profile security context of gpuvc's containers. */}}
{{- define "gpuvc.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
fsGroup: 65532
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "gpuvc.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end }}

{{/* Checks the schema cannot express. */}}
{{- define "gpuvc.validate" -}}
{{- $ports := list (int .Values.webhook.port) (int .Values.manager.healthPort) -}}
{{- if .Values.metrics.enabled }}{{ $ports = append $ports (int .Values.metrics.port) }}{{ end -}}
{{- if ne (len $ports) (len (uniq $ports)) -}}
{{- fail (printf "webhook.port, manager.healthPort and metrics.port must differ, got %v" $ports) -}}
{{- end -}}
{{- if and (eq (toString .Values.metrics.serviceMonitor.enabled) "true") (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.enabled" -}}
{{- end -}}
{{- end }}

{{/*
gpuvc.operatorObject: "true" when a Prometheus Operator object is wanted: its value is
true, or auto and the cluster serves the API ("monitoring.coreos.com/v1/<Kind>").
Args: root, enabled, api.
*/}}
{{- define "gpuvc.operatorObject" -}}
{{- $e := toString .enabled -}}
{{- if or (eq $e "true") (and (eq $e "auto") (.root.Capabilities.APIVersions.Has .api)) -}}true{{- end -}}
{{- end }}

{{/* gpuvc.scrapeAnnotations: prometheus.io/* pod annotations for a metrics port. */}}
{{- define "gpuvc.scrapeAnnotations" -}}
prometheus.io/scrape: "true"
prometheus.io/port: {{ . | quote }}
prometheus.io/path: /metrics
{{- end }}
