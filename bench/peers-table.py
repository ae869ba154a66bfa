#!/usr/bin/env python3
"""One table from the three peer benchmarks of one `scripts/bench-peers` run.

Reads target/bench-data/hyperfine.json (scripts/bench-validate),
target/bench-data/gateway/gateway.json (scripts/bench-gateway) and
target/bench-data/reload/reload.json (scripts/bench-reload), and prints one
Markdown table: per row seam's figure, each peer's, and whether seam is ahead
of every peer. Lower is better unless the row says "higher is better".
"""
import collections
import json
import statistics
import sys
from pathlib import Path

data = Path(sys.argv[1] if len(sys.argv) > 1 else "target/bench-data")
rows = []  # (benchmark, measure, seam, {peer: value}, higher_is_better, unit)


def add(bench, measure, seam, peers, higher=False, unit=""):
    peers = {k: v for k, v in peers.items() if v is not None}
    if seam is None or not peers:
        return
    rows.append((bench, measure, seam, peers, higher, unit))


# --- validate ------------------------------------------------------------------
hf = data / "hyperfine.json"
if hf.exists():
    by_file = {}
    for r in json.loads(hf.read_text())["results"]:
        exe = r["command"].split()[0]
        tool = "check-jsonschema" if "check-jsonschema" in exe else "ajv-cli" if "ajv" in exe else "seam"
        by_file.setdefault(r["parameters"]["file"], {})[tool] = statistics.median(r["times"]) * 1000
    for file, t in by_file.items():
        name = "1,000-mount file" if file.endswith("large.yaml") else Path(file).name
        add("validate", f"{name}, median ms", t.get("seam"), {k: v for k, v in t.items() if k != "seam"}, unit="ms")

# --- gateway -------------------------------------------------------------------
gw = data / "gateway" / "gateway.json"
problems = []  # peers that failed or figures that are missing: printed under the table
if not hf.exists():
    problems.append(f"no {hf}: the validate rows are missing")
if gw.exists():
    gateway = json.loads(gw.read_text())
    res = {r["key"]: r for r in gateway["results"]}
    clients = gateway["clients"]
    problems += [f"gateway: {f['name']} FAILED: {f['error'].splitlines()[0]}" for f in gateway.get("failures", [])]
    seam = res.get("seam-http")
    peer_keys = {"supergateway": "supergateway", "mcp-hub": "mcp-hub", "fastmcp": "fastmcp proxy", "everything-http": "server-everything's own HTTP"}
    if seam:
        def peers(f):
            return {label: f(res[k]) for k, label in peer_keys.items() if k in res}
        add("gateway (HTTP)", "p50 µs, 1 client", seam["one"]["p50"], peers(lambda r: r["one"]["p50"]), unit="µs")
        add("gateway (HTTP)", "p99 µs, 1 client", seam["one"]["p99"], peers(lambda r: r["one"]["p99"]), unit="µs")
        add("gateway (HTTP)", "calls/s, 1 client (higher is better)", seam["one"]["callsPerSec"], peers(lambda r: r["one"]["callsPerSec"]), higher=True)
        add("gateway (HTTP)", f"p50 µs, {clients} clients", seam["many"]["p50"], peers(lambda r: r["many"]["p50"]), unit="µs")
        add("gateway (HTTP)", f"p99 µs, {clients} clients", seam["many"]["p99"], peers(lambda r: r["many"]["p99"]), unit="µs")
        add("gateway (HTTP)", f"calls/s, {clients} clients (higher is better)", seam["many"]["callsPerSec"], peers(lambda r: r["many"]["callsPerSec"]), higher=True)
        # The gateways' own processes; server-everything's own HTTP is a whole server, not a gateway, so it is left out here.
        gateways = {k: v for k, v in peers(lambda r: r["rssKb"] / 1024 if r.get("rssKb") else None).items() if k != peer_keys["everything-http"]}
        add("gateway (HTTP)", "RSS MB of the gateway process", seam["rssKb"] / 1024, gateways)
    if "seam-stdio" in res and "direct" in res:
        add("gateway (stdio)", "p50 µs, 1 client, vs the server alone", res["seam-stdio"]["one"]["p50"], {"no gateway": res["direct"]["one"]["p50"]}, unit="µs")

else:
    problems.append(f"no {gw}: the gateway rows are missing")

# --- reload ----------------------------------------------------------------------
rl = data / "reload" / "reload.json"
if rl.exists():
    r = json.loads(rl.read_text())
    a, hub = r.get("a"), r.get("hub")
    if r.get("hubError"):
        problems.append(f"reload: mcp-hub FAILED: {r['hubError'].splitlines()[0]}")
    n, callers = r["mounts"], r["callers"]
    if a and hub:
        add("reload", f"env edit of 1 of {n} servers: write → list_changed p50 ms", a["ms"]["p50"], {"mcp-hub --watch": hub["ms"]["p50"]}, unit="ms")
        add("reload", "the same, p95 ms", a["ms"]["p95"], {"mcp-hub --watch": hub["ms"]["p95"]}, unit="ms")
        add("reload", f"calls failed during the edits ({callers} callers)", a["calls"]["failed"], {"mcp-hub --watch": hub["calls"]["failed"]})
        add("reload", "edits whose change was not visible after list_changed", a["invisible"] + a["timeouts"], {"mcp-hub --watch": hub["invisible"] + hub["timeouts"]})
        add("reload", f"RSS MB with {n} servers, after the edits", a["rssKb"] / 1024, {"mcp-hub --watch": hub["rssKb"] / 1024 if hub.get("rssKb") else None})


def fmt(v):
    if isinstance(v, int) or float(v).is_integer() and abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.1f}" if abs(v) >= 10 else f"{v:,.2f}"


print("| benchmark | measure | seam | peers | best peer | seam ahead of every peer |")
print("| --- | --- | ---: | --- | ---: | --- |")
tally = collections.Counter()
for bench, measure, seam, peers, higher, _ in rows:
    best_name, best = (max if higher else min)(peers.items(), key=lambda kv: kv[1])
    if higher:
        ahead = seam > best
        tie = seam == best
    else:
        ahead = seam < best
        tie = seam == best
    if tie:
        verdict = "tied"
    elif ahead:
        ratio = (seam / best) if higher else (best / seam if seam else float("inf"))
        verdict = f"yes ({ratio:.1f}×)" if ratio != float("inf") else "yes"
    else:
        ratio = (best / seam if seam else float("inf")) if higher else (seam / best if best else float("inf"))
        verdict = f"**no** ({best_name} {ratio:.2f}×)" if ratio != float("inf") else f"**no** ({best_name})"
    tally["tied" if tie else "ahead" if ahead else "behind"] += 1
    others = ", ".join(f"{k} {fmt(v)}" for k, v in peers.items())
    print(f"| {bench} | {measure} | {fmt(seam)} | {others} | {fmt(best)} | {verdict} |")
print()
print(f"{len(rows)} rows: seam ahead of every peer on {tally['ahead']}, tied on {tally['tied']}, behind a peer on {tally['behind']}.")
for p in problems:
    print(f"- {p}")
