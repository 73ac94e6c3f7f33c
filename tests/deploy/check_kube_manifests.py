#!/usr/bin/python3
"""Checks deploy/kubernetes/ as Kubernetes would read it, without a cluster (issue #27).

kubectl cannot check a manifest without an API server to ask for its schema, so every object
is read against the API's own model: the Kubernetes Python client's generated classes
(Debian's python3-kubernetes, scripts/bootstrap.sh), which list each kind's fields, their
types and which are required. On top of the schema, what a cluster would only show at run
time:
  - a field no Kubernetes object has (a typo: `volumeMount`) is an error, not ignored;
  - selectors select their own pod template; a Service's targetPort names a container port;
  - every volumeMount has its volume, every volume is mounted, every ConfigMap, claim and
    service account named exists, every secret named is one README.md tells the admin to make;
  - RBAC is read-only (get, list, watch), no wildcard, except the idle reaper's example
    (reaper.yaml): a namespaced Role with exactly delete on pods and patch on the scale
    subresources; the agent mounts no service account token and every host path read-only;
    every container drops all capabilities;
  - every `--flag` in a container's args is one `gpufleet <command> --help` lists (with --gpufleet).
--self-test breaks the manifests in each of those ways and fails unless each is caught.

Usage: check_kube_manifests.py DIR [--gpufleet BIN] [--self-test]
"""
import argparse
import copy
import os
import re
import subprocess
import sys

import yaml
from kubernetes import client

# Created by the admin (deploy/kubernetes/README.md), never shipped: they hold keys and tokens.
EXTERNAL_SECRETS = {"gpufleet-tls", "gpufleet-node-token"}
READ_VERBS = {"get", "list", "watch"}
# Examples the admin applies by hand, not by `kubectl apply -k`.
EXAMPLES = {"servicemonitor.yaml", "reaper.yaml"}
# reaper.yaml: a Role in a namespace that opted in to idle reaping (one the admin's, not the
# manifests'), with only what stopping a pod takes: (apiGroup, resource) -> verbs.
REAPER_FILE = "reaper.yaml"
REAPER_RULES = {("", "pods"): {"delete"},
                ("apps", "deployments/scale"): {"patch"},
                ("apps", "statefulsets/scale"): {"patch"},
                ("apps", "replicasets/scale"): {"patch"}}
# The Prometheus Operator's ServiceMonitor is a custom resource: no model in the client. The
# fields the example uses, from the operator's API reference.
SERVICE_MONITOR = {
    "apiVersion": str, "kind": str,
    "metadata": "V1ObjectMeta",
    "spec": {
        "selector": "V1LabelSelector",
        "namespaceSelector": {"matchNames": [str], "any": bool},
        "endpoints": [{
            "port": str, "path": str, "scheme": str, "interval": str, "honorLabels": bool,
            "tlsConfig": {"serverName": str, "insecureSkipVerify": bool,
                          "ca": {"secret": {"name": str, "key": str},
                                 "configMap": {"name": str, "key": str}}},
        }],
    },
}


def model_of(api_version, kind):
    """The client's class for apps/v1 DaemonSet (V1DaemonSet), or None."""
    version = api_version.split("/")[-1]
    return getattr(client, version[0].upper() + version[1:] + kind, None)


def check_type(value, type_name, path, errors):
    """value against a type of the client's openapi_types ('list[V1Container]', 'str', ...)."""
    if value is None:
        return
    if type_name.startswith("list["):
        if not isinstance(value, list):
            errors.append(f"{path}: a list expected, got {type(value).__name__}")
            return
        for i, item in enumerate(value):
            check_type(item, type_name[5:-1], f"{path}[{i}]", errors)
        return
    if type_name.startswith("dict("):
        inner = type_name[5:-1].split(",", 1)[1].strip()
        if not isinstance(value, dict):
            errors.append(f"{path}: a map expected, got {type(value).__name__}")
            return
        for key, item in value.items():
            check_type(item, inner, f"{path}.{key}", errors)
        return
    scalars = {"str": str, "int": int, "bool": bool, "float": (int, float), "datetime": str}
    if type_name in scalars:
        wrong_bool = type_name == "int" and isinstance(value, bool)
        if wrong_bool or not isinstance(value, scalars[type_name]):
            errors.append(f"{path}: {type_name} expected, got {value!r}")
        return
    if type_name == "object":  # IntOrString, Quantity, free-form
        return
    model = getattr(client, type_name)
    if not isinstance(value, dict):
        errors.append(f"{path}: a {type_name} (map) expected, got {value!r}")
        return
    by_json = {json: attr for attr, json in model.attribute_map.items()}
    for key, item in value.items():
        if key not in by_json:
            errors.append(f"{path}.{key}: no such field in {type_name}")
            continue
        check_type(item, model.openapi_types[by_json[key]], f"{path}.{key}", errors)
    # Required fields: the model's constructor refuses None for them.
    try:
        client.ApiClient()._ApiClient__deserialize(value, type_name)
    except (ValueError, TypeError) as e:
        errors.append(f"{path}: {e}")


def check_plain(value, schema, path, errors):
    """value against a hand-written schema (SERVICE_MONITOR)."""
    if isinstance(schema, str):
        check_type(value, schema, path, errors)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            errors.append(f"{path}: a list expected")
            return
        for i, item in enumerate(value):
            check_plain(item, schema[0], f"{path}[{i}]", errors)
    elif isinstance(schema, dict):
        if not isinstance(value, dict):
            errors.append(f"{path}: a map expected")
            return
        for key, item in value.items():
            if key not in schema:
                errors.append(f"{path}.{key}: no such field")
            else:
                check_plain(item, schema[key], f"{path}.{key}", errors)
    elif not isinstance(value, schema):
        errors.append(f"{path}: {schema.__name__} expected, got {value!r}")


def name(doc):
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def pod_spec(doc):
    if doc.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "Job"):
        return doc["spec"]["template"]["spec"]
    return None


def check_schema(docs, errors):
    for file, doc in docs:
        where = f"{file}: {name(doc)}"
        if doc.get("kind") == "ServiceMonitor":
            check_plain(doc, SERVICE_MONITOR, where, errors)
            continue
        model = model_of(doc.get("apiVersion", ""), doc.get("kind", ""))
        if model is None:
            errors.append(f"{where}: no Kubernetes kind {doc.get('apiVersion')} {doc.get('kind')}")
            continue
        check_type(doc, model.__name__, where, errors)


def check_references(docs, errors):
    have = {(d.get("kind"), d.get("metadata", {}).get("namespace"), d["metadata"]["name"])
            for _, d in docs}
    namespaces = {n for k, _, n in have if k == "Namespace"}
    for file, doc in docs:
        where = f"{file}: {name(doc)}"
        meta = doc.get("metadata", {})
        ns = meta.get("namespace")
        cluster_wide = doc["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding")
        if not cluster_wide and ns not in namespaces and file != REAPER_FILE:
            errors.append(f"{where}: namespace {ns!r} is not one of the manifests' {sorted(namespaces)}")
        spec = pod_spec(doc)
        if spec is not None:
            template_labels = doc["spec"]["template"]["metadata"].get("labels", {})
            for key, value in doc["spec"]["selector"].get("matchLabels", {}).items():
                if template_labels.get(key) != value:
                    errors.append(f"{where}: selector {key}={value} does not select its own pods")
            account = spec.get("serviceAccountName")
            if account and ("ServiceAccount", ns, account) not in have:
                errors.append(f"{where}: service account {account} is not in the manifests")
            volumes = {v["name"]: v for v in spec.get("volumes", [])}
            mounted = set()
            for container in spec.get("containers", []):
                for mount in container.get("volumeMounts", []):
                    mounted.add(mount["name"])
                    if mount["name"] not in volumes:
                        errors.append(f"{where}: container {container['name']} mounts "
                                      f"{mount['name']}, which is no volume of the pod")
                    elif "hostPath" in volumes[mount["name"]] and not mount.get("readOnly"):
                        errors.append(f"{where}: host path {mount['name']} mounted writable")
                caps = container.get("securityContext", {}).get("capabilities", {})
                if caps.get("drop") != ["ALL"] or caps.get("add"):
                    errors.append(f"{where}: container {container['name']} keeps capabilities")
            for vname, volume in volumes.items():
                if vname not in mounted:
                    errors.append(f"{where}: volume {vname} is never mounted")
                if "configMap" in volume and ("ConfigMap", ns, volume["configMap"]["name"]) not in have:
                    errors.append(f"{where}: ConfigMap {volume['configMap']['name']} is not in the manifests")
                claim = volume.get("persistentVolumeClaim", {}).get("claimName")
                if claim and ("PersistentVolumeClaim", ns, claim) not in have:
                    errors.append(f"{where}: claim {claim} is not in the manifests")
                secret = volume.get("secret", {}).get("secretName")
                if secret and secret not in EXTERNAL_SECRETS:
                    errors.append(f"{where}: secret {secret} is not one README.md has the admin make")
        if doc["kind"] == "Service":
            pods = [(d, pod_spec(d)) for _, d in docs
                    if pod_spec(d) is not None and d["metadata"].get("namespace") == ns and
                    all(d["spec"]["template"]["metadata"].get("labels", {}).get(k) == v
                        for k, v in doc["spec"]["selector"].items())]
            if not pods:
                errors.append(f"{where}: its selector matches no pod template")
            ports = {p.get("name") for _, s in pods for c in s["containers"] for p in c.get("ports", [])}
            for port in doc["spec"]["ports"]:
                target = port.get("targetPort")
                if isinstance(target, str) and target not in ports:
                    errors.append(f"{where}: targetPort {target} is no container port of its pods")
        if file == REAPER_FILE and doc["kind"] in ("ClusterRole", "Role", "ClusterRoleBinding",
                                                   "RoleBinding"):
            check_reaper_rbac(where, doc, errors)
        elif doc["kind"] in ("ClusterRole", "Role"):
            for rule in doc.get("rules", []):
                verbs = set(rule.get("verbs", []))
                if not verbs <= READ_VERBS or "*" in rule.get("resources", []) + rule.get("apiGroups", []):
                    errors.append(f"{where}: rule {rule} asks more than read access (get, list, watch)")
        if doc["kind"] in ("ClusterRoleBinding", "RoleBinding"):
            ref = doc["roleRef"]
            if (ref["kind"], None if ref["kind"] == "ClusterRole" else ns, ref["name"]) not in have:
                errors.append(f"{where}: role {ref['name']} is not in the manifests")
            for subject in doc.get("subjects", []):
                if (subject["kind"], subject.get("namespace"), subject["name"]) not in have:
                    errors.append(f"{where}: subject {subject['name']} is not in the manifests")
        if doc["kind"] == "DaemonSet" and spec.get("automountServiceAccountToken") is not False:
            errors.append(f"{where}: mounts a service account token (it never talks to the API server)")


def check_reaper_rbac(where, doc, errors):
    """reaper.yaml: namespaced, and no more than stopping pods takes."""
    if doc["kind"].startswith("Cluster") or doc.get("roleRef", {}).get("kind") == "ClusterRole":
        errors.append(f"{where}: the idle reaper's grant must be a namespaced Role (one per "
                      "namespace that opted in), not cluster-wide")
        return
    for rule in doc.get("rules", []):
        for group in rule.get("apiGroups", []):
            for resource in rule.get("resources", []):
                allowed = REAPER_RULES.get((group, resource), set())
                verbs = set(rule.get("verbs", []))
                if not verbs <= allowed:
                    errors.append(f"{where}: {resource} ({group or 'core'}): "
                                  f"{sorted(verbs - allowed)} is more than stopping a pod takes")


# `gpufleet COMMAND --help`, by command: asked once per run, not once per check (the self-test
# checks the manifests once per breakage).
HELPS = {}


def check_flags(docs, gpufleet, errors):
    helps = HELPS
    for file, doc in docs:
        spec = pod_spec(doc)
        for container in (spec or {}).get("containers", []):
            if not container["image"].startswith("gpufleet:") or not container.get("args"):
                continue
            command = container["args"][0]
            if command not in helps:
                run = subprocess.run([gpufleet, command, "--help"], capture_output=True, text=True)
                helps[command] = run.stdout + run.stderr
            for arg in container["args"][1:]:
                flag = arg.split("=", 1)[0]
                if flag.startswith("--") and not re.search(re.escape(flag) + r"\b", helps[command]):
                    errors.append(f"{file}: {name(doc)}: `gpufleet {command}` has no {flag}")


def check_kustomization(directory, docs, errors):
    with open(os.path.join(directory, "kustomization.yaml")) as f:
        listed = yaml.safe_load(f)["resources"]
    for file in listed:
        if not os.path.exists(os.path.join(directory, file)):
            errors.append(f"kustomization.yaml: {file} does not exist")
    for file in sorted({f for f, _ in docs}):
        if file not in listed and file not in EXAMPLES:
            errors.append(f"kustomization.yaml: {file} is not listed")


def load(directory):
    docs = []
    for file in sorted(os.listdir(directory)):
        if file.endswith(".yaml") and file != "kustomization.yaml":
            with open(os.path.join(directory, file)) as f:
                docs += [(file, d) for d in yaml.safe_load_all(f) if d]
    return docs


def check(directory, docs, gpufleet):
    errors = []
    check_schema(docs, errors)
    check_references(docs, errors)
    check_kustomization(directory, docs, errors)
    if gpufleet:
        check_flags(docs, gpufleet, errors)
    return errors


def find(docs, kind):
    return next(d for _, d in docs if d["kind"] == kind)


def self_test(directory, docs, gpufleet):
    """Each way of breaking the manifests must be caught, by the message meant for it."""
    def agent(d):
        return find(d, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]

    breakages = {
        "no such field": lambda d: agent(d).update(volumeMount=[]),
        "int expected": lambda d: find(d, "Deployment")["spec"].update(replicas="one"),
        "must not be `None`": lambda d: agent(d).pop("name"),
        "does not select its own pods":
            lambda d: find(d, "DaemonSet")["spec"]["selector"]["matchLabels"].update(app="x"),
        "no volume of the pod": lambda d: agent(d)["volumeMounts"].append({"name": "nope", "mountPath": "/x"}),
        "mounted writable": lambda d: agent(d)["volumeMounts"][0].pop("readOnly"),
        "asks more than read access": lambda d: find(d, "ClusterRole")["rules"][0]["verbs"].append("delete"),
        "more than stopping a pod takes": lambda d: find(d, "Role")["rules"][0]["verbs"].append("create"),
        "not cluster-wide": lambda d: find(d, "Role").update(kind="ClusterRole"),
        "mounts a service account token":
            lambda d: find(d, "DaemonSet")["spec"]["template"]["spec"].pop("automountServiceAccountToken"),
        "keeps capabilities": lambda d: agent(d)["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]),
        "no container port": lambda d: find(d, "Service")["spec"]["ports"][0].update(targetPort="http"),
        "not one README.md has": lambda d: find(d, "Deployment")["spec"]["template"]["spec"]["volumes"][2]
            ["secret"].update(secretName="other"),
    }
    if gpufleet:
        breakages["has no --no-such-flag"] = lambda d: agent(d)["args"].append("--no-such-flag=1")
    failed = 0
    for expected, breakage in breakages.items():
        broken = copy.deepcopy(docs)
        breakage(broken)
        errors = check(directory, broken, gpufleet)
        if not any(expected in e for e in errors):
            print(f"FAIL: a manifest broken for '{expected}' was not caught: {errors}")
            failed += 1
        else:
            print(f"ok: caught '{expected}'")
    return failed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--gpufleet")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    docs = load(args.directory)
    errors = check(args.directory, docs, args.gpufleet)
    for error in errors:
        print("error:", error)
    kinds = sorted({d["kind"] for _, d in docs})
    print(f"{len(docs)} objects ({', '.join(kinds)}): {len(errors)} errors")
    failed = self_test(args.directory, docs, args.gpufleet) if args.self_test else 0
    return 1 if errors or failed else 0


if __name__ == "__main__":
    sys.exit(main())
