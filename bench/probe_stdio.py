#!/usr/bin/env python3
"""How much a stdio client that writes and never reads can make seam hold
(issue 23, "Bounded everywhere"). For each flood, `seam serve
compositions/base.yaml` is started over pipes; the client writes `initialize`,
`notifications/initialized` and 200,000 requests without reading anything
for 20 s (seam is expected to stop reading it, so the writes block), then
reads every answer. Printed per flood: the requests the client got written in
those 20 s, seam's RSS then, its peak RSS (the largest VmHWM read: the kernel
updates it lazily) and its RSS after every answer was read.

    python3 bench/probe_stdio.py --seam PATH     (run by `scripts/probe stdio`, from the repository's root)

Pipes only, no network; each flood ends within 20 s plus a 120 s bound on the
draining, after which seam is killed. Standard library only: the main
driver is run by `scripts/probe`, the one entry point for the probes.
"""

import json
import os
import subprocess
import sys
import threading
import time

REQUESTS = 200_000
UNREAD_SECONDS = 20
DRAIN_BOUND_SECONDS = 120

FLOODS = {
    "tools/list": lambda n: {"jsonrpc": "2.0", "id": n, "method": "tools/list"},
    # A fixed tool of base.yaml that answers at once, without the network: a bundled skill.
    "tools/call skill": lambda n: {
        "jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "skill", "arguments": {"name": "authoring-compositions"}},
    },
}


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def mib(field):
    return int(field.split()[0]) / 1024


def probe(binary, name, request):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    seam = subprocess.Popen(
        [binary, "serve", "compositions/base.yaml"], cwd=root,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    written = [0]

    def write():
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe-stdio", "version": "1"}}}
        lines = [initialize, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
        try:
            for message in lines:
                seam.stdin.write((json.dumps(message) + "\n").encode())
            seam.stdin.flush()
            for n in range(1, REQUESTS + 1):
                # One write per line, unbuffered: `written` counts what seam's pipe took.
                seam.stdin.write((json.dumps(request(n)) + "\n").encode())
                seam.stdin.flush()
                written[0] = n
        except (BrokenPipeError, ValueError):
            pass

    threading.Thread(target=write, daemon=True).start()
    time.sleep(UNREAD_SECONDS)
    written_unread = written[0]
    unread = status(seam.pid)

    # Drain: read every answer (the initialize one and one per request).
    answers, refused, buffer = 0, 0, b""
    started = time.monotonic()
    os.set_blocking(seam.stdout.fileno(), False)
    while answers < REQUESTS + 1 and time.monotonic() - started < DRAIN_BOUND_SECONDS:
        try:
            chunk = os.read(seam.stdout.fileno(), 1 << 20)
        except BlockingIOError:
            time.sleep(0.005)
            continue
        if not chunk:
            break
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        answers += len(lines)
        refused += sum(b"TOOL_CALLS_EXCEEDED" in line for line in lines)
    drained = time.monotonic() - started
    after = status(seam.pid)
    seam.stdin.close()
    try:
        seam.wait(timeout=10)
    except subprocess.TimeoutExpired:
        seam.kill()
        seam.wait()
    return {
        "flood": name,
        "written": written_unread,
        "unread": mib(unread["VmRSS"]),
        "peak": max(mib(unread["VmHWM"]), mib(after["VmHWM"])),
        "after": mib(after["VmRSS"]),
        "answers": answers,
        "refused": refused,
        "drained": drained,
    }


def main():
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    binary = sys.argv[sys.argv.index("--seam") + 1] if "--seam" in sys.argv else os.path.join(target, "release", "seam")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"seam {binary}; {os.cpu_count()} cores; load average {load}", file=sys.stderr)
    print("| flood | requests written, unread (20 s) | RSS then | peak RSS | RSS after draining | answers read | `TOOL_CALLS_EXCEEDED` | drain time |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, request in FLOODS.items():
        r = probe(binary, name, request)
        print(f"| {r['flood']} | {r['written']:,} of {REQUESTS:,} | {r['unread']:.1f} MiB | {r['peak']:.1f} MiB "
              f"| {r['after']:.1f} MiB | {r['answers']:,} of {REQUESTS + 1:,} | {r['refused']:,} | {r['drained']:.1f} s |", flush=True)


if __name__ == "__main__":
    main()
