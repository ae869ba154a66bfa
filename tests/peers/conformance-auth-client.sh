#!/usr/bin/env bash
# seam as the client of the official MCP conformance suite's authorization scenarios
# (`conformance client --command THIS`): the suite runs this with its server's URL as
# the last argument and the scenario's name and context (a client's id and secret) in
# MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT. It mounts that server as
# `kind: mcp.http` with `auth.oauth`, logs in where a person would (`seam login`, the
# person being curl), and calls the server's tool through seam (`seam call`).
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
# Every scenario's client is a pre-registered one when the scenario gives one, else
# seam's metadata document where the scenario looks for it, else registered on the spot.
client=
if [[ -n $(field client_id) ]]; then client="client_id: \"$(field client_id)\","; fi
if [[ -n $(field client_secret) ]]; then client="$client client_secret_file: secret,"; fi
if [[ -n $(field private_key_pem) ]]; then
  field private_key_pem >"$dir/key.pem"
  client="$client private_key_file: key.pem, signing_algorithm: $(field signing_algorithm),"
fi
case ${MCP_CONFORMANCE_SCENARIO:-} in
  auth/client-credentials*) oauth="{ grant: client_credentials, $client }" ;;
  auth/basic-cimd) oauth="{ client_metadata_url: \"https://conformance-test.local/client-metadata.json\", state_file: state.json }" ;;
  *) oauth="{ $client state_file: state.json }" ;;
esac
cat >"$dir/composition.yaml" <<YAML
seam: 1
mounts:
  conformance:
    kind: mcp.http
    url: "$url"
    protocol: auto
    auth: { oauth: $oauth }
YAML
seam=${SEAM:?the seam binary}
# A person's login, the person being curl: it opens the printed URL, and the scenario's
# authorization server sends it back to seam's loopback at once.
login() {
  "$seam" login "$dir/composition.yaml" conformance --no-browser "$@" </dev/null 2>"$dir/login.err" &
  local pid=$! authorize=
  for _ in $(seq 200); do
    authorize=$(grep -m1 -o 'https\?://[^ ]*' "$dir/login.err" || true)
    [[ -n $authorize ]] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [[ -n $authorize ]] && curl -s -L -o /dev/null "$authorize" || true
  wait "$pid" || { cat "$dir/login.err" >&2; exit 1; }
}
[[ $oauth == *client_credentials* ]] || login
# Connect, list, and call the scenario server's tool. A call the server refuses for its
# scope, or because it wants a login again, needs the person: seam's answer names the
# login to run (with the scopes, for a step-up); they run it, and call again.
if ! "$seam" call "$dir/composition.yaml" mcp__conformance__test-tool >"$dir/call.json"; then
  # A mount that did not come up says why where the composition's state is shown.
  grep -q MCP_OAUTH_LOGIN_NEEDED "$dir/call.json" || "$seam" inventory --probe --format json "$dir/composition.yaml" >>"$dir/call.json" 2>/dev/null || true
  grep -q MCP_OAUTH_LOGIN_NEEDED "$dir/call.json" || { cat "$dir/call.json" >&2; exit 1; }
  wanted=$(grep -o -- '--scope \\"[^\\]*' "$dir/call.json" | head -1 | sed 's/--scope \\"//' || true)
  if [[ -n $wanted ]]; then login --scope "$wanted"; else login; fi
  "$seam" call "$dir/composition.yaml" mcp__conformance__test-tool >/dev/null
fi
