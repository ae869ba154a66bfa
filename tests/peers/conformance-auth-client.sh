#!/usr/bin/env bash
# seam as the client of the official MCP conformance suite's authorization scenarios
# (`conformance client --command THIS`): the suite runs this with its server's URL as
# the last argument and the scenario's name and context (a client's id and secret) in
# MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT. It mounts that server as
# `kind: mcp.http` with `auth.oauth`, and has seam connect and list its tools
# (`seam inventory --probe`), as a client would before its first call.
#
#   SEAM=PATH             the seam binary
#   SEAM_WRONG_SECRET=1   send another secret than the scenario's (a run that must fail)
set -euo pipefail
url=${*: -1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
context=${MCP_CONFORMANCE_CONTEXT:-'{}'}
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ""))' "$context" "$1"; }
if [[ -n ${SEAM_WRONG_SECRET:-} ]]; then echo wrong >"$dir/secret"; else field client_secret >"$dir/secret"; fi
chmod 600 "$dir/secret"
case ${MCP_CONFORMANCE_SCENARIO:-} in
  auth/client-credentials*) oauth="{ grant: client_credentials, client_id: \"$(field client_id)\", client_secret_file: secret }" ;;
  *) oauth="{}" ;;
esac
cat >"$dir/composition.yaml" <<YAML
seam: 1
mounts:
  conformance:
    kind: mcp.http
    url: "$url"
    required: true
    auth: { oauth: $oauth }
YAML
"${SEAM:?the seam binary}" inventory --probe "$dir/composition.yaml" >/dev/null
