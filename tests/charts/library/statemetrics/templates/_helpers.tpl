{{- define "statemetrics.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "statemetrics.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* the tag defaults to the appVersion; a sha is appended as @sha256: */}}
{{- define "statemetrics.image" -}}
{{- $tag := .Values.image.tag | default (printf "v%s" .Chart.AppVersion) -}}
{{- if .Values.image.sha -}}
{{- printf "%s/%s:%s@sha256:%s" .Values.image.registry .Values.image.repository $tag .Values.image.sha -}}
{{- else -}}
{{- printf "%s/%s:%s" .Values.image.registry .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* group of each collector, for the ClusterRole */}}
{{- define "statemetrics.group" -}}
{{- if has . (list "deployments" "daemonsets" "statefulsets" "replicasets") -}}apps
{{- else if has . (list "cronjobs" "jobs") -}}batch
{{- else if eq . "ingresses" -}}networking.k8s.io
{{- end -}}
{{- end -}}
