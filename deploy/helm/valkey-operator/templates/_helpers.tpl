{{/* The three controllers, in the order they are rendered. */}}
{{- define "valkey-operator.controllers" -}}
volume workload topology
{{- end }}

{{/* Helm's labels, on every object the chart renders. */}}
{{- define "valkey-operator.helmLabels" -}}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* The labels that select one controller's pods: (dict "c" <controller>). */}}
{{- define "valkey-operator.selector" -}}
app.kubernetes.io/name: valkey-operator
app.kubernetes.io/component: {{ .c }}-controller
{{- end }}

{{/* ClusterRole or Role, by .Values.namespaced. */}}
{{- define "valkey-operator.roleKind" -}}
{{- if .Values.namespaced }}Role{{ else }}ClusterRole{{ end }}
{{- end }}

{{/* A controller's image: (dict "v" <its values> "root" $). */}}
{{- define "valkey-operator.image" -}}
{{- printf "%s:%s" .v.image.repository (default .root.Chart.AppVersion .v.image.tag) }}
{{- end }}
