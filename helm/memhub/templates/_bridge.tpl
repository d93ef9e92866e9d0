{{/*
One bridge entry merged over bridgeDefaults (the entry wins); call with (dict "root" $ "bridge" $entry).
Returns YAML; use with fromYaml.
*/}}
{{- define "memhub.bridge.merged" -}}
{{- $merged := mergeOverwrite (deepCopy .root.Values.bridgeDefaults) (deepCopy .bridge) -}}
{{- toYaml $merged -}}
{{- end -}}

{{/* The narrowing TOML of a bridge (empty when it narrows nothing); call with the merged bridge. */}}
{{- define "memhub.bridge.narrowingToml" -}}
{{- $n := .narrowing | default dict -}}
{{- with $n.namespaces }}
namespaces = {{ toJson . }}
{{- end }}
{{- with $n.defaultNamespace }}
default_namespace = {{ toJson . }}
{{- end }}
{{- with $n.tools }}
tools = {{ toJson . }}
{{- end }}
{{- end -}}
