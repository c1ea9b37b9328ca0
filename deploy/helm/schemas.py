#!/usr/bin/env python3
"""Writes the JSON schemas kubeconform checks the Helm chart against
(deploy/helm/schemas, committed: CI cannot download kubeconform's default
schemas). One standalone, strict schema per kind the chart renders, named as
kubeconform's -schema-location template {{ .ResourceKind }}{{ .KindSuffix }}.json
expects (deployment-apps-v1.json, servicemonitor-monitoring-v1.json).

Sources, all from Go modules (make chart-schemas downloads them):
  the Kubernetes API's OpenAPI v2 document that k8s.io/cli-runtime ships
  (artifacts/openapi/swagger.json), and the CRDs of prometheus-operator
  (jsonnet/prometheus-operator/*-crd.json) and KEDA (config/crd/bases).

Strict: objects with listed properties reject unknown ones, as the API server
does. Descriptions are dropped (validation does not read them).
"""

import json
import pathlib
import sys

import yaml

CORE_KINDS = {
    "io.k8s.api.apps.v1.Deployment": "deployment-apps-v1",
    "io.k8s.api.core.v1.Service": "service-v1",
    "io.k8s.api.autoscaling.v2.HorizontalPodAutoscaler": "horizontalpodautoscaler-autoscaling-v2",
    "io.k8s.api.policy.v1.PodDisruptionBudget": "poddisruptionbudget-policy-v1",
}
INT_OR_STRING = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
QUANTITY = {"oneOf": [{"type": "string"}, {"type": "number"}]}


def strict(node):
    """Drops descriptions, closes objects, and writes the Kubernetes
    int-or-string extension as JSON Schema, in place, recursively."""
    if isinstance(node, list):
        for v in node:
            strict(v)
        return node
    if not isinstance(node, dict):
        return node
    node.pop("description", None)
    if node.pop("x-kubernetes-int-or-string", False) or node.get("format") == "int-or-string":
        for k in ("type", "format"):
            node.pop(k, None)
        node.update(INT_OR_STRING)
    if "properties" in node and "additionalProperties" not in node and not node.get(
        "x-kubernetes-preserve-unknown-fields"
    ):
        node["additionalProperties"] = False
    for k, v in list(node.items()):
        if k == "properties":
            for p in v.values():
                strict(p)
        elif isinstance(v, (dict, list)):
            strict(v)
    return node


def inline(defs, name, stack=()):
    """The definition with every $ref replaced by its target; a recursive
    reference (none in the kinds above) becomes an open schema."""
    if name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString":
        return dict(INT_OR_STRING)
    if name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return dict(QUANTITY)
    if name in stack:
        return {}

    def walk(node):
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if ref:
            return inline(defs, ref.rsplit("/", 1)[1], stack + (name,))
        return {k: walk(v) for k, v in node.items()}

    return walk(json.loads(json.dumps(defs[name])))


def write(out, name, schema):
    schema = strict(schema)
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    (out / f"{name}.json").write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")


def crd_schemas(crd):
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    for v in crd["spec"]["versions"]:
        name = f"{kind.lower()}-{group.split('.')[0]}-{v['name']}"
        yield name, v["schema"]["openAPIV3Schema"]


def main():
    if len(sys.argv) != 5:
        sys.exit("usage: deploy/helm/schemas.py OUT_DIR SWAGGER_JSON PROMETHEUS_OPERATOR_DIR KEDA_DIR")
    out, swagger, prom, keda = (pathlib.Path(a) for a in sys.argv[1:])
    out.mkdir(parents=True, exist_ok=True)
    defs = json.loads(swagger.read_text())["definitions"]
    for name, file in CORE_KINDS.items():
        write(out, file, inline(defs, name))
    crds = [
        json.loads((prom / "jsonnet/prometheus-operator" / f).read_text())
        for f in ("servicemonitors-crd.json", "podmonitors-crd.json")
    ]
    crds.append(yaml.safe_load((keda / "config/crd/bases/keda.sh_scaledobjects.yaml").read_text()))
    for crd in crds:
        for name, schema in crd_schemas(crd):
            if name.endswith(("-v1", "-v1alpha1")):
                write(out, name, schema)


if __name__ == "__main__":
    main()
