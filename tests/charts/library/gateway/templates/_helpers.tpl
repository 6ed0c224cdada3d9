{{- define "gateway.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gateway.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "gateway.selector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.controller.name }}
{{- end -}}

{{/* registry/image:tag, and @digest when a digest is set (null or "" removes it) */}}
{{- define "gateway.image" -}}
{{- $img := .Values.controller.image -}}
{{- printf "%s/%s:%s" $img.registry $img.image $img.tag -}}
{{- with $img.digest }}{{ printf "@%s" . }}{{ end -}}
{{- end -}}
