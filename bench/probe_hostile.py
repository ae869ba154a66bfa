"""Replays the hostile inputs of issue 34 against `seam serve --transport http`.

    python3 bench/probe_hostile.py --seam PATH [--only sessions,reads,secrets,links,subscriptions,errors]

Each sub-probe writes a composition of its own into a temp folder, starts seam
on a loopback port (its stderr names it), does what a hostile client or a
careless edit would do, prints what it measured and one verdict line,
`held` (the hole stays closed) or `OPEN`, and stops seam and its children:
  sessions       50 `initialize` headed and sent as 2026-07-28 at one agent
                 (`max_sessions: 8`, `max_sessions_per_agent: 4`), then another
                 agent's plain one; then 16 concurrent plain ones against the
                 rest of the cap, in 3 rounds, ended with DELETE between rounds;
  reads          a skill folder holding a 15 MiB file, read whole over
                 `resources/read` by 10, 40 and 80 concurrent 2026-07-28
                 clients, each count on a fresh seam (PROBE_RSS_CAP_MIB, 8192,
                 stops one that grows past it); seam's VmRSS sampled every
                 20 ms: before, peak, and for PROBE_AFTER (10) s after
                 (target: peak under 256 MB, back within 32 MB of before
                 within 10 s);
  secrets        broken edits carrying a random secret written under the watcher
                 (an inline bearer token, an Authorization header, a YAML syntax
                 error on the secret's line, a URL password, a URL api_key); the
                 secret looked for in /status, /ui, /events, seam's log and
                 `seam validate` in every format; then a URL from ${MCP_URL}
                 with a password and a key;
  links          one agent's flood of resource links (4,100) against another
                 agent's link to the same URI through its scoped mount;
  subscriptions  PROBE_LISTENS (300) `subscriptions/listen` streams of 1,024
                 URIs each, held (target: at most 64 streams and 4,096
                 subscriptions for the agent);
  errors         malformed 2026-07-28 requests (a wrong-typed requestState and
                 taskId, a 100,000-character method, a 100 KB URI, a listen of
                 a 2 MB URI), the long method and URI also from a 2025-11-25
                 session (no Mcp-Method/Mcp-Name header carries them): each
                 answer's code and size (target: under 1 KB).
Sub-probes print figures; the driver exits 0 unless one of them could not run
(1). Loopback only; every wait is bounded (PROBE_PATIENCE, 30 s, per wait;
PROBE_DEADLINE, 900 s, for the whole run). Standard library only, like the
other probe drivers (scripts/probe).
"""

import argparse
import http.client
import json
import os
import random
import re
import resource
import secrets as randomness
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

MIB = 1 << 20
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Deadline(BaseException):
    """PROBE_DEADLINE passed: not a timeout of one request, which the probes count as an answer."""


def env_int(name, default):
    return int(os.environ.get(name, default))


PATIENCE = env_int("PROBE_PATIENCE", 30)


def verdict(name, held, why):
    print(f"{name}: {'held' if held else 'OPEN'} ({why})", flush=True)
    return held


def show(label, value):
    print(f"  {label}: {value if isinstance(value, str) else json.dumps(value)}", flush=True)


def mib(n):
    return f"{n / MIB:.1f} MiB"


def descendants(pid):
    """Every process below `pid` (children lead process groups of their own, so a group signal misses them)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            parents[int(entry)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], [pid]
    while frontier:
        p = frontier.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.append(child)
                frontier.append(child)
    return found


class Seam:
    """`seam serve FILE --transport http` on a loopback port; its log, and its VmRSS every 20 ms."""

    def __init__(self, binary, composition, watch=False, env=None, log_level="warn"):
        self.binary, self.composition = binary, composition
        args = [binary, "serve", composition, "--transport", "http", "--listen", "127.0.0.1:0"]
        if not watch:
            args.append("--no-watch")
        self.proc = subprocess.Popen(
            args,
            cwd=os.path.dirname(composition),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", log_level), **(env or {})},
            start_new_session=True,
        )
        self.log, self._lock = [], threading.Lock()
        found = {}
        ready = threading.Event()

        def drain():
            for raw in self.proc.stderr:
                line = raw.decode(errors="replace")
                with self._lock:
                    self.log.append(line)
                m = re.search(r"serving agent `default` at http://([0-9.]+):([0-9]+)/mcp", line)
                if m and not ready.is_set():
                    found["addr"] = (m.group(1), int(m.group(2)))
                    ready.set()
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(60) or "addr" not in found:
            self.stop()
            raise RuntimeError("seam did not serve within 60 s:\n" + self.logged()[-4000:])
        self.host, self.port = found["addr"]
        self.samples = []  # (monotonic time, VmRSS bytes)
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def logged(self):
        with self._lock:
            return "".join(self.log)

    def rss(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def _sample(self):
        while not self._stop.is_set() and self.proc.poll() is None:
            self.samples.append((time.monotonic(), self.rss()))
            time.sleep(0.02)

    def peak(self, since, until=None):
        until = until or time.monotonic()
        window = [r for t, r in self.samples if since <= t <= until]
        return max(window) if window else self.rss()

    # HTTP, one connection per request: (status or "closed"/"timeout"/"error …", headers, body).
    def request(self, method, path, headers=None, body=None, timeout=PATIENCE):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            head = {k.lower(): v for k, v in resp.getheaders()}
            if "text/event-stream" in head.get("content-type", ""):
                data = read_sse_answer(resp)
            else:
                data = resp.read()
            return resp.status, head, data
        except (socket.timeout, TimeoutError):
            return "timeout", {}, b""
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            return "closed", {}, b""
        except (OSError, http.client.HTTPException) as e:
            return f"error {e}", {}, b""
        finally:
            conn.close()

    def get(self, path):
        return self.request("GET", path)

    def status(self):
        code, _, body = self.get("/status")
        if code != 200:
            raise RuntimeError(f"/status answered {code}")
        return json.loads(body)

    def first_event(self, timeout=10):
        """The first event of `/events` (the status page's sections, whole)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        seen = b""
        try:
            conn.request("GET", "/events")
            resp = conn.getresponse()
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                seen += chunk
                at = seen.find(b"event: update")
                if at >= 0 and b"\n\n" in seen[at:]:
                    break
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        return seen.decode(errors="replace")

    def modern(self, path, method, params=None, capabilities=None, timeout=PATIENCE):
        """A request as a 2026-07-28 client sends it: no session, its version and capabilities in `_meta`."""
        body, headers = modern_request(method, params, capabilities)
        code, _, data = self.request("POST", path, headers, body, timeout)
        return code, data

    def wait_for(self, what, check, limit=PATIENCE):
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                if check():
                    return True
            except (RuntimeError, ValueError, KeyError, TypeError):
                pass
            time.sleep(0.1)
        print(f"  (gave up waiting {limit} s for {what})", flush=True)
        return False

    def wait_mounts_ready(self, ids, limit=60):
        def ready():
            mounts = self.status()["mounts"]
            return all(mounts.get(i, {}).get("state") == "ready" for i in ids)

        return self.wait_for(f"mounts {ids} to be ready", ready, limit)

    def stop(self):
        self._stop_sampling()
        below = descendants(self.proc.pid) if self.proc.poll() is None else []
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
            except ProcessLookupError:
                pass
        # seam stops its mounts on SIGTERM; anything of them still running is ended here.
        deadline = time.monotonic() + 5
        for pid in below:
            while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and not zombie(pid):
                time.sleep(0.05)
            if os.path.exists(f"/proc/{pid}") and not zombie(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _stop_sampling(self):
        if hasattr(self, "_stop"):
            self._stop.set()


def zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] == "Z"
    except (OSError, ValueError):
        return True


def read_sse_answer(resp, limit=64 * MIB):
    """An SSE answer's body up to its first JSON-RPC response (a stream may stay open after it)."""
    seen = b""
    while len(seen) < limit:
        chunk = resp.read1(65536)
        if not chunk:
            break
        seen += chunk
        if any(is_response(m) for m in sse_messages(seen)):
            break
    return seen


def sse_messages(data):
    """The JSON messages of the complete events in an SSE body."""
    out = []
    for event in data.replace(b"\r\n", b"\n").split(b"\n\n")[:-1]:
        lines = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
        if lines:
            try:
                out.append(json.loads(b"\n".join(lines)))
            except ValueError:
                pass
    return out


def is_response(m):
    return isinstance(m, dict) and "id" in m and ("result" in m or "error" in m)


def answer_of(data):
    """The JSON-RPC response in a body, SSE or plain JSON; None when there is none."""
    try:
        m = json.loads(data)
        if isinstance(m, dict):
            return m
    except ValueError:
        pass
    found = [m for m in sse_messages(data + b"\n\n") if is_response(m)]
    return found[0] if found else None


def modern_request(method, params=None, capabilities=None, request_id=1):
    params = dict(params or {})
    params["_meta"] = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities or {},
    }
    headers = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    for key in ("name", "uri", "taskId"):
        if isinstance(params.get(key), str):
            headers["Mcp-Name"] = params[key]
            break
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
    return body, headers


def initialize_body(version):
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "probe-hostile", "version": "1"}},
        }
    ).encode()


def scratch(name):
    return tempfile.mkdtemp(prefix=f"seam-hostile-{name}-")


def write(path, text):
    """An editor's atomic save: the watcher sees the whole new file at once."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def concurrently(n, one):
    """`one(i)` on `n` threads released together; their results, in order."""
    barrier, results = threading.Barrier(n), [None] * n

    def run(i):
        try:
            barrier.wait(PATIENCE)
        except threading.BrokenBarrierError:
            pass
        results[i] = one(i)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(PATIENCE * 4)
    return results


def everything_mount(mount_id):
    command = os.path.join(ROOT, ".cache/peers/node_modules/.bin/mcp-server-everything")
    if not os.path.exists(command):
        raise RuntimeError(f"no {command}: run scripts/install-peers")
    return f"  {mount_id}:\n    kind: mcp.stdio\n    command: {json.dumps(command)}\n    args: [stdio]\n"


# --- sessions ---------------------------------------------------------------------------------


def probe_sessions(binary):
    cap, per_agent = 8, 4
    folder = scratch("sessions")
    file = os.path.join(folder, "c.yaml")
    write(file, f"seam: 1\nserve:\n  max_sessions: {cap}\n  max_sessions_per_agent: {per_agent}\nagents:\n  other: {{}}\n")
    seam = Seam(binary, file)
    held = True
    try:
        modern_headers = {**MCP_HEADERS, "MCP-Protocol-Version": MODERN}
        answers = concurrently(50, lambda i: seam.request("POST", "/agents/other/mcp", modern_headers, initialize_body(MODERN)))
        codes = tally(a[0] for a in answers)
        other_ids = [a[1].get("mcp-session-id") for a in answers if a[0] == 200]
        clients = seam.status()["clients"]
        show("(a) 50 initializes headed and sent as 2026-07-28 at /agents/other/mcp, answers", codes)
        show("(a) sessions opened for `other`", len(other_ids))
        show("(a) /status clients", clients)
        a_held = len(other_ids) <= per_agent and clients["sessions"] <= cap
        plain = seam.request("POST", "/mcp", MCP_HEADERS, initialize_body(LEGACY))
        show("(a) then a plain 2025-11-25 initialize at /mcp", plain[0])
        a_held &= plain[0] == 200
        held &= verdict("sessions (a) one agent's 2026-headed initializes", a_held,
                        f"{len(other_ids)} opened of {per_agent} per agent; another agent's answered {plain[0]}")
        if plain[0] == 200 and plain[1].get("mcp-session-id"):
            delete(seam, "/mcp", plain[1]["mcp-session-id"])

        other_open = seam.status()["clients"]["agents"].get("other", {}).get("sessions", 0)
        rest = min(per_agent, cap - other_open)
        show("(b) sessions `other` keeps open", other_open)
        show("(b) places left for `default`", rest)
        b_held, rounds = True, []
        for round_ in range(3):
            answers = concurrently(16, lambda i: seam.request("POST", "/mcp", MCP_HEADERS, initialize_body(LEGACY)))
            opened = [a[1].get("mcp-session-id") for a in answers if a[0] == 200]
            clients = seam.status()["clients"]
            rounds.append({"round": round_ + 1, "answers": tally(a[0] for a in answers), "opened": len(opened),
                           "clients.sessions": clients["sessions"], "clients.agents": clients["agents"]})
            show(f"(b) round {round_ + 1}", rounds[-1])
            b_held &= len(opened) <= rest and clients["sessions"] <= cap
            deleted = tally(delete(seam, "/mcp", sid) for sid in opened if sid)
            show(f"(b) round {round_ + 1} DELETE answers", deleted)
            seam.wait_for("the ended sessions to be given back",
                          lambda: seam.status()["clients"]["agents"].get("default", {}).get("sessions", 0) == 0, 10)
        held &= verdict("sessions (b) 16 concurrent initializes × 3 rounds", b_held,
                        f"opened per round {[r['opened'] for r in rounds]} against {rest} places; never more than {cap} open"
                        if b_held else f"opened per round {[r['opened'] for r in rounds]} against {rest} places")
        for sid in other_ids:
            if sid:
                delete(seam, "/agents/other/mcp", sid)
        show("/status clients at the end", seam.status()["clients"])
    finally:
        seam.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return held


def delete(seam, path, session):
    return seam.request("DELETE", path, {**MCP_HEADERS, "Mcp-Session-Id": session})[0]


def tally(values):
    out = {}
    for v in values:
        out[str(v)] = out.get(str(v), 0) + 1
    return dict(sorted(out.items()))


# --- reads ------------------------------------------------------------------------------------


def probe_reads(binary):
    peak_target, back_target, after = 256 * 1000 * 1000, 32 * 1000 * 1000, env_int("PROBE_AFTER", 10)
    rss_cap = env_int("PROBE_RSS_CAP_MIB", 8192) * MIB  # past it, seam is stopped: the machine is not this probe's to take
    folder = scratch("reads")
    skill = os.path.join(folder, "skills", "big")
    os.makedirs(skill)
    with open(os.path.join(skill, "SKILL.md"), "w") as f:
        f.write("---\nname: big\ndescription: A skill whose folder holds a 15 MiB file.\n---\nRead data.bin.\n")
    with open(os.path.join(skill, "data.bin"), "wb") as f:
        f.write(os.urandom(15 * MIB))
    size = os.path.getsize(os.path.join(skill, "data.bin"))
    file = os.path.join(folder, "c.yaml")
    write(file, "seam: 1\nmounts:\n  skills:\n    kind: skills.fs\n    custom_dirs: [./skills]\n"
                "    include_default_roots: false\ntools:\n  skill: true\n")
    held = True
    try:
        # Each concurrency on a seam of its own, so that its `before` is a fresh process's.
        for n in (10, 40, 80):
            seam = Seam(binary, file)
            try:
                run_held = reads_at(seam, n, size, peak_target, back_target, after, rss_cap)
            finally:
                seam.stop()
            if run_held is None:  # seam went (PROBE_RSS_CAP_MIB): OPEN, and the larger runs skipped
                held = False
                break
            held &= run_held
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return held


def reads_at(seam, n, size, peak_target, back_target, after, rss_cap):
    """`n` concurrent whole reads of the skill's 15 MiB file: held, not, or None when seam is gone."""
    code, data = seam.modern("/mcp", "skills/list")
    skills = (answer_of(data) or {}).get("result", {}).get("skills", [])
    uris = [r.get("uri") for s in skills for r in s.get("resources", [])]
    uri = next((u for u in uris if u and u.endswith("/data.bin")), None)
    if uri is None:
        code, data = seam.modern("/mcp", "resources/list")
        uris = [r.get("uri") for r in (answer_of(data) or {}).get("result", {}).get("resources", [])]
        uri = next((u for u in uris if u and u.endswith("/data.bin")), None)
    if n == 10:
        show("skills/list", f"{code}; {[s.get('uri') for s in skills]}; resources {uris}")
        show("the URI read", uri)
    if uri is None:
        raise RuntimeError("no URI of data.bin in skills/list or resources/list")
    body, headers = modern_request("resources/read", {"uri": uri})

    def read_one(_):
        """One whole read, streamed (the driver keeps none of it): (ok, bytes, seconds, what went wrong)."""
        started = time.monotonic()
        conn = http.client.HTTPConnection(seam.host, seam.port, timeout=120)
        got, head = 0, b""
        try:
            conn.request("POST", "/mcp", body=body, headers=headers)
            resp = conn.getresponse()
            while True:
                chunk = resp.read1(1 << 20)
                if not chunk:
                    break
                if len(head) < 4096:
                    head += chunk[: 4096 - len(head)]
                got += len(chunk)
            ok = resp.status == 200 and b'"result"' in head and got >= size * 4 // 3
            return ok, got, time.monotonic() - started, "" if ok else f"{resp.status} {head[:160]!r}"
        except (OSError, http.client.HTTPException) as e:
            return False, got, time.monotonic() - started, f"{type(e).__name__}"
        finally:
            conn.close()

    time.sleep(1)
    before = seam.rss()
    t0 = time.monotonic()
    watchdog_stop, capped = threading.Event(), []

    def watchdog():
        while not watchdog_stop.wait(0.05):
            if seam.rss() > rss_cap:
                capped.append(seam.rss())
                os.killpg(seam.proc.pid, signal.SIGKILL)
                return

    threading.Thread(target=watchdog, daemon=True).start()
    results = concurrently(n, read_one)
    t1 = time.monotonic()
    watchdog_stop.set()
    peak = seam.peak(t0, t1)
    ok = [r for r in results if r and r[0]]
    failures = tally(r[3] for r in results if r and not r[0])
    back_at, lowest, t_end = None, None, t1 + after
    while time.monotonic() < t_end and seam.proc.poll() is None:
        now = seam.rss()
        lowest = now if lowest is None else min(lowest, now)
        if back_at is None and now <= before + back_target:
            back_at = time.monotonic() - t1
        time.sleep(0.02)
    rss_after = seam.rss()
    row = {
        "concurrent": n,
        "reads ok": len(ok),
        "failed": failures,
        "bytes per answer": max((r[1] for r in ok), default=0),
        "wall s": round(t1 - t0, 2),
        "slowest read s": round(max((r[2] for r in results if r), default=0), 2),
        "RSS before": mib(before),
        "peak RSS": mib(peak),
        f"RSS {after} s after": mib(rss_after),
        f"lowest in the {after} s after": mib(lowest or 0),
        "back within 32 MB after": f"{back_at:.2f} s" if back_at is not None else f"not within {after} s",
    }
    if capped:
        row["stopped"] = f"seam killed at {mib(capped[0])} (PROBE_RSS_CAP_MIB)"
    show(f"{n} concurrent", row)
    back = f"back within 32 MB after {back_at:.2f} s" if back_at is not None else f"not back within 32 MB in {after} s"
    run_held = peak < peak_target and back_at is not None and not capped and len(ok) == n
    verdict(f"reads ×{n}", run_held, f"peak {mib(peak)} against 256 MB; {back}; {len(ok)}/{n} reads whole")
    if seam.proc.poll() is not None:
        print("  seam is gone; the larger runs are skipped", flush=True)
        return None
    return run_held


# --- secrets ----------------------------------------------------------------------------------


def secret(label):
    return f"s3cr3t{label}{randomness.token_hex(10)}"


def probe_secrets(binary):
    folder = scratch("secrets")
    file = os.path.join(folder, "seam.yaml")
    write(file, "seam: 1\n")
    password, key = secret("pw"), secret("key")
    closed = free_port()
    mcp_url = f"http://alice:{password}@127.0.0.1:{closed}/mcp?api_key={key}"
    seam = Seam(binary, file, watch=True, env={"MCP_URL": mcp_url}, log_level="debug")
    held = True
    everything = [password, key]
    mount = lambda extra: f"seam: 1\nmounts:\n  remote:\n    kind: mcp.http\n{extra}"
    try:
        values = [secret(k) for k in ("bearer", "header", "syntax", "password", "query")]
        everything += values
        edits = [
            ("bearer_token inline", f"seam: 1\nserve:\n  bearer_token: sk-live-{values[0]}\n"),
            ("Authorization header", mount(f"    url: http://127.0.0.1:9/mcp\n    headers: {{ Authorization: \"Bearer {values[1]}\" }}\n")),
            ("YAML syntax error on the secret's line",
             f"seam: 1\nmounts:\n  remote: {{ kind: mcp.http, url: \"http://127.0.0.1:9/mcp\", api_key: {values[2]} ]\n"),
            ("URL password", mount(f"    url: \"http://alice:{values[3]}@127.0.0.1:9/mcp\"\n")),
            ("URL api_key", mount(f"    url: \"http://127.0.0.1:9/mcp?api_key={values[4]}\"\n")),
        ]
        for (label, text), value in zip(edits, values):
            before = seam.status().get("last_reload")
            write(file, text)
            changed = seam.wait_for("the edit's reload", lambda: seam.status().get("last_reload") != before
                                    and seam.status().get("reloading_since") is None)
            status = seam.status()
            last = status.get("last_reload") or {}
            diagnostics = last.get("diagnostics") or []
            first = diagnostics[0] if diagnostics else {}
            places = {
                "/status": json.dumps(status),
                "/ui": seam.get("/ui")[2].decode(errors="replace"),
                "/events": seam.first_event(),
                "log": seam.logged(),
            }
            for fmt in ("human", "github", "json"):
                out = subprocess.run([binary, "validate", "--format", fmt, file], capture_output=True, timeout=PATIENCE)
                places[f"validate {fmt}"] = (out.stdout + out.stderr).decode(errors="replace")
                places[f"validate {fmt}"] += f"\n(exit {out.returncode})"
            leaks = [p for p, text_ in places.items() if value in text_]
            show(f"{label}: bytes looked at", {p: len(t) for p, t in places.items()})
            show(label, {"reloaded": changed, "outcome": last.get("outcome"), "code": first.get("code"),
                         "quoted line masked": "***" in (first.get("rendered") or ""),
                         "validate exits": [places[f"validate {f}"].rsplit("(exit ", 1)[1].rstrip(")") for f in ("human", "github", "json")],
                         "secret found in": leaks or "nowhere"})
            held &= verdict(f"secrets: {label}", changed and not leaks,
                            "the secret is in none of /status, /ui, /events, the log, validate ×3" if not leaks and changed
                            else ("no reload seen" if not changed else f"the secret shows in {', '.join(leaks)}"))

        before = seam.status().get("last_reload")
        write(file, mount("    url: ${MCP_URL}\n    startup_timeout: 5s\n"))
        seam.wait_for("the ${MCP_URL} reload", lambda: seam.status().get("last_reload") != before)
        seam.wait_for("the mount to fail", lambda: isinstance(seam.status()["mounts"]["remote"].get("detail"), str))
        status = seam.status()
        remote = status.get("mounts", {}).get("remote", {})
        places = {"/status": json.dumps(status), "/ui": seam.get("/ui")[2].decode(errors="replace"),
                  "/events": seam.first_event(), "log": seam.logged()}
        leaks = [f"{which} in {p}" for p, text_ in places.items() for which, v in (("password", password), ("api_key", key)) if v in text_]
        detail = remote.get("detail") or ""
        typed = [t for t in ("seam_mcp::", "Transport [") if t in detail]
        show("${MCP_URL} outcome", (status.get("last_reload") or {}).get("outcome"))
        show("${MCP_URL} mount", {"state": remote.get("state"), "url": remote.get("url"), "detail": detail})
        show("${MCP_URL} secrets found in", leaks or "nowhere")
        held &= verdict("secrets: a URL from ${MCP_URL}", bool(remote) and not leaks and not typed,
                        "neither secret shows; the detail names no Rust type" if remote and not leaks and not typed
                        else f"leaks {leaks}; Rust types in the detail {typed}" if remote else "no mount `remote` in /status")
    finally:
        seam.stop()
    time.sleep(0.5)
    logged = seam.logged()
    leaks = [v for v in everything if v in logged]
    show("seam's whole log", f"{len(logged)} bytes at RUST_LOG=debug; secrets in it: {len(leaks)}")
    held &= verdict("secrets: the whole log after stop", not leaks, f"{len(leaks)} of {len(everything)} secrets in it")
    shutil.rmtree(folder, ignore_errors=True)
    return held


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- links ------------------------------------------------------------------------------------


def probe_links(binary):
    folder = scratch("links")
    file = os.path.join(folder, "c.yaml")
    server = os.path.join(ROOT, "tests/peers/flaky-mcp-server.mjs")
    mount = lambda i: (f"  {i}:\n    kind: mcp.stdio\n    command: node\n    args: [{json.dumps(server)}]\n"
                       f"    env:\n      FLAKY_LINKS: {i}\n")
    write(file, f"seam: 1\nmounts:\n{mount('pub')}{mount('priv')}agents:\n  other:\n    mounts: [priv]\n")
    seam = Seam(binary, file)
    try:
        if not seam.wait_mounts_ready(["pub", "priv"]):
            raise RuntimeError(f"the mounts did not come up: {json.dumps(seam.status().get('mounts'))[:600]}")

        def call(path, tool, arguments):
            code, data = seam.modern(path, "tools/call", {"name": tool, "arguments": arguments})
            answer = answer_of(data) or {}
            content = answer.get("result", {}).get("content")
            return f"{code}, {len(content)} links" if isinstance(content, list) else f"{code}, {data[:200]!r}"

        def read(path, uri):
            code, data = seam.modern(path, "resources/read", {"uri": uri})
            answer = answer_of(data) or {}
            contents = answer.get("result", {}).get("contents") or [{}]
            text = contents[0].get("text")
            return text if text is not None else json.dumps(answer.get("error") or answer)[:200]

        uri = "x://private"
        steps = [
            ("other calls mcp__priv__link", call("/agents/other/mcp", "mcp__priv__link", {"uri": uri})),
            ("other reads x://private", read("/agents/other/mcp", uri)),
            ("default calls mcp__pub__link (same URI)", call("/mcp", "mcp__pub__link", {"uri": uri})),
            ("default reads x://private", read("/mcp", uri)),
            ("other reads x://private", read("/agents/other/mcp", uri)),
            ("default calls mcp__pub__link {x://flood, count 4100}", call("/mcp", "mcp__pub__link", {"uri": "x://flood", "count": 4100})),
            ("other reads x://private after the flood", read("/agents/other/mcp", uri)),
            ("default reads x://flood/4099", read("/mcp", "x://flood/4099")),
            ("default reads x://flood/3 (past its 4,096)", read("/mcp", "x://flood/3")),
        ]
        for label, said in steps:
            show(label, said)
        expected = f"priv: {uri}"
        mine = [steps[1][1], steps[4][1], steps[6][1]]
        return verdict("links", all(s == expected for s in mine),
                       f"other's reads answered {mine}" if any(s != expected for s in mine)
                       else f"other's read answers `{expected}` before, beside and after default's links and flood")
    finally:
        seam.stop()
        shutil.rmtree(folder, ignore_errors=True)


# --- subscriptions ----------------------------------------------------------------------------


class Listen:
    """One `subscriptions/listen` stream, held on a thread until `close`."""

    def __init__(self, seam, path, body, headers):
        self.seam, self.path, self.body, self.headers = seam, path, body, headers
        self.seen, self.status, self.ended, self.conn, self.failed = b"", None, False, None, None
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.conn = http.client.HTTPConnection(self.seam.host, self.seam.port, timeout=PATIENCE)
            self.conn.request("POST", self.path, body=self.body, headers=self.headers)
            resp = self.conn.getresponse()
            self.status = resp.status
            self.conn.sock.settimeout(None)  # held until `close` shuts the socket down
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    self.ended = True
                    return
                with self._lock:
                    if len(self.seen) < 4 * MIB:
                        self.seen += chunk
        except (OSError, http.client.HTTPException, AttributeError) as e:
            self.failed = type(e).__name__
            self.ended = True

    def said(self):
        with self._lock:
            return self.seen

    def close(self):
        try:
            if self.conn and self.conn.sock:
                self.conn.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.thread.join(5)
        try:
            if self.conn:
                self.conn.close()
        except OSError:
            pass


def probe_subscriptions(binary):
    n, per_stream = env_int("PROBE_LISTENS", 300), 1024
    max_streams, max_subscriptions = 64, 4096
    folder = scratch("subscriptions")
    file = os.path.join(folder, "c.yaml")
    write(file, f"seam: 1\nmounts:\n{everything_mount('everything')}")
    seam = Seam(binary, file)
    streams = []
    try:
        if not seam.wait_mounts_ready(["everything"]):
            raise RuntimeError("server-everything did not come up")
        uris = [f"demo://resource/dynamic/text/{i}" for i in range(1, per_stream + 1)]
        body, headers = modern_request("subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True, "resourceSubscriptions": uris}}, request_id=42)
        before = seam.rss()
        show("RSS before", mib(before))
        show("/status clients before", seam.status()["clients"])
        t0 = time.monotonic()
        streams = [Listen(seam, "/mcp", body, headers) for _ in range(n)]
        most = {"listen_streams": 0, "subscriptions": 0, "sessions": 0}
        last_change, last_counts = time.monotonic(), None
        deadline = t0 + env_int("PROBE_LISTEN_HOLD", 90)
        while time.monotonic() < deadline:
            agent = seam.status()["clients"]["agents"].get("default", {})
            for k in most:
                most[k] = max(most[k], agent.get(k, 0))
            counts = (agent.get("listen_streams"), agent.get("subscriptions"),
                      sum(1 for s in streams if s.ended or b"acknowledged" in s.said() or b'"error"' in s.said()))
            if counts != last_counts:
                last_counts, last_change = counts, time.monotonic()
            # Settled: every stream answered (acknowledged, refused or ended) and the counts still for 3 s.
            if counts[2] == n and time.monotonic() - last_change > 3:
                break
            time.sleep(0.25)
        t1 = time.monotonic()
        peak = seam.peak(t0, t1)
        held_clients = seam.status()["clients"]
        kinds = {"acknowledged and held": 0, "refused SUBSCRIPTIONS_EXCEEDED": 0, "other error": 0,
                 "ended without error": 0, "no answer": 0}
        statuses = tally(s.status for s in streams)
        for s in streams:
            said = s.said()
            if b"SUBSCRIPTIONS_EXCEEDED" in said:
                kinds["refused SUBSCRIPTIONS_EXCEEDED"] += 1
            elif b'"error"' in said:
                kinds["other error"] += 1
            elif b"acknowledged" in said and not s.ended:
                kinds["acknowledged and held"] += 1
            elif s.ended:
                kinds["ended without error"] += 1
            else:
                kinds["no answer"] += 1
        acked = sum(1 for s in streams if b"acknowledged" in s.said())
        reasons = {"max_listen_streams_per_agent": 0, "max_subscriptions_per_agent": 0}
        for s in streams:
            for reason in reasons:
                if reason.encode() in s.said():
                    reasons[reason] += 1
        refusals = [s.said() for s in streams if b"SUBSCRIPTIONS_EXCEEDED" in s.said()]
        example = ""
        if refusals:
            m = next((m for m in sse_messages(refusals[0]) if isinstance(m, dict) and "error" in m), None)
            example = json.dumps(m["error"])[:300] if m else refusals[0][-300:].decode(errors="replace")
        show(f"{n} listen streams of {per_stream} URIs each, HTTP answers", statuses)
        show("streams", kinds)
        show("refusals by bound", reasons)
        show("streams that were acknowledged at some point (rmcp acknowledges before seam's handler refuses)", acked)
        if example:
            show("a refusal", example)
        show("/status clients while held", held_clients)
        show("most seen for `default` while held", most)
        show("RSS before / peak while held", f"{mib(before)} / {mib(peak)}")
        show("seconds to settle", round(t1 - t0, 1))
        ok = most["listen_streams"] <= max_streams and most["subscriptions"] <= max_subscriptions \
            and kinds["acknowledged and held"] <= max_streams
        return verdict("subscriptions", ok,
                       f"at most {most['listen_streams']} streams and {most['subscriptions']} subscriptions held for the agent "
                       f"(bounds {max_streams}, {max_subscriptions}); {kinds['acknowledged and held']} streams held open")
    finally:
        for s in streams:
            try:
                s.conn and s.conn.sock and s.conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for s in streams:
            s.close()
        seam.stop()
        shutil.rmtree(folder, ignore_errors=True)


# --- errors -----------------------------------------------------------------------------------


def probe_errors(binary):
    folder = scratch("errors")
    file = os.path.join(folder, "c.yaml")
    write(file, f"seam: 1\nmounts:\n{everything_mount('everything')}")
    seam = Seam(binary, file)
    held = True
    try:
        if not seam.wait_mounts_ready(["everything"]):
            raise RuntimeError("server-everything did not come up")
        long_method = "m" * 100_000
        long_uri = "demo://resource/dynamic/text/" + "7" * (100_000 - len("demo://resource/dynamic/text/"))
        tasks = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
        cases = [
            ("tools/call with requestState: 5", "tools/call",
             {"name": "mcp__everything__echo", "arguments": {"message": "x"}, "requestState": 5}, None, {-32602}),
            ("tasks/get with taskId: 5", "tasks/get", {"taskId": 5}, tasks, {-32602}),
            ("an unknown method of 100,000 characters", long_method, {}, None, {-32601}),
            ("resources/read of a 100 KB URI", "resources/read", {"uri": long_uri}, None, {-32602}),
        ]
        for label, method, params, caps, expected in cases:
            body, headers = modern_request(method, params, caps)
            head_bytes = sum(len(k) + len(v) + 4 for k, v in headers.items())
            code, head, data = seam.request("POST", "/mcp", headers, body)
            answer = answer_of(data) if data else None
            error = (answer or {}).get("error") or {}
            rpc = error.get("code")
            # The long method or URI rides in a header too (Mcp-Method, Mcp-Name): a head seam will not
            # read whole is refused by HTTP (431) before JSON-RPC reads it, nothing echoed, and counts as held.
            head_refused = code == 431
            ok = len(data) < 1024 and (rpc in expected or head_refused)
            show(label, {"request head bytes": head_bytes, "HTTP": code, "code": rpc, "answer bytes": len(data),
                         "message": (error.get("message") or data[:200].decode(errors="replace"))[:160]})
            held &= verdict(f"errors: {label}", ok,
                            f"HTTP {code}, {'code ' + str(rpc) if rpc is not None else 'no JSON-RPC answer'}, {len(data)} bytes"
                            + (" (the head refused by HTTP before JSON-RPC)" if head_refused else ""))

        # The same long method and URI from a session's client, whose revision carries no
        # Mcp-Method/Mcp-Name headers: they reach JSON-RPC in the body alone.
        code, head, _ = seam.request("POST", "/mcp", MCP_HEADERS, initialize_body(LEGACY))
        sid = head.get("mcp-session-id")
        if code != 200 or not sid:
            raise RuntimeError(f"a session's initialize answered {code}")
        session_headers = {**MCP_HEADERS, "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY}
        seam.request("POST", "/mcp", session_headers, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        for label, method, params, expected in [
            ("in a session: an unknown method of 100,000 characters", long_method, {}, {-32601}),
            ("in a session: resources/read of a 100 KB URI", "resources/read", {"uri": long_uri}, {-32602}),
        ]:
            body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).encode()
            code, _, data = seam.request("POST", "/mcp", session_headers, body)
            answer = answer_of(data) or {}
            error = answer.get("error") or {}
            rpc = error.get("code")
            ok = len(data) < 1024 and rpc in expected
            show(label, {"HTTP": code, "code": rpc, "answer bytes": len(data), "message": (error.get("message") or "")[:160]})
            held &= verdict(f"errors: {label}", ok, f"HTTP {code}, code {rpc}, {len(data)} bytes")
        delete(seam, "/mcp", sid)

        # A listen whose one URI is 2 MB: its acknowledgement must not echo it.
        huge = "demo://resource/dynamic/text/" + "7" * (2 * MIB)
        body, headers = modern_request("subscriptions/listen",
                                       {"notifications": {"toolsListChanged": True, "resourceSubscriptions": [huge]}}, request_id=42)
        stream = Listen(seam, "/mcp", body, headers)
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline and not stream.ended and b"acknowledged" not in stream.said() \
                and b'"error"' not in stream.said():
            time.sleep(0.05)
        time.sleep(0.3)
        said = stream.said()
        stream.close()
        first = said.split(b"\n\n")[0] if b"acknowledged" in said else said
        ack = next((m for m in sse_messages(said) if isinstance(m, dict) and "acknowledged" in json.dumps(m)[:200]), None)
        show("listen of a 2 MB URI", {"request bytes": len(body), "HTTP": stream.status,
                                       "acknowledged": b"acknowledged" in said, "bytes said": len(said),
                                       "acknowledgement bytes": len(first),
                                       "acknowledgement": json.dumps(ack)[:300] if ack else said[:300].decode(errors="replace")})
        held &= verdict("errors: listen of a 2 MB URI", b"acknowledged" in said and len(first) < 1024 and huge.encode() not in said,
                        f"acknowledged in {len(first)} bytes, the URI not echoed" if len(first) < 1024
                        else f"the acknowledgement is {len(first)} bytes")
    finally:
        seam.stop()
        shutil.rmtree(folder, ignore_errors=True)
    return held


# --- main -------------------------------------------------------------------------------------

PROBES = {
    "sessions": probe_sessions,
    "reads": probe_reads,
    "secrets": probe_secrets,
    "links": probe_links,
    "subscriptions": probe_subscriptions,
    "errors": probe_errors,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seam", required=True)
    parser.add_argument("--only", default=",".join(PROBES), help="the sub-probes to run, by key")
    args = parser.parse_args()
    binary = os.path.abspath(args.seam)
    only = [k for k in args.only.split(",") if k]
    unknown = [k for k in only if k not in PROBES]
    if unknown:
        sys.exit(f"probe_hostile: no sub-probe {unknown} ({', '.join(PROBES)})")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    random.seed()

    def deadline_passed(*_):
        raise Deadline("PROBE_DEADLINE passed")

    signal.signal(signal.SIGALRM, deadline_passed)
    signal.alarm(env_int("PROBE_DEADLINE", 900))
    verdicts, broken = {}, []
    try:
        for key in only:
            print(f"\n#### {key}\n", flush=True)
            started = time.monotonic()
            try:
                verdicts[key] = PROBES[key](binary)
            except Deadline:
                raise
            except Exception as e:  # the sub-probe could not run: said, and the exit code says so
                broken.append(key)
                print(f"{key}: could not run: {e}", flush=True)
                traceback.print_exc()
            print(f"  ({time.monotonic() - started:.1f} s)", flush=True)
    except Deadline as e:
        print(f"probe_hostile: {e}", flush=True)
        broken.append("deadline")
    finally:
        signal.alarm(0)
    print("\n| sub-probe | verdict |\n| --- | --- |")
    for key in only:
        v = "could not run" if key in broken or key not in verdicts else ("held" if verdicts[key] else "OPEN")
        print(f"| {key} | {v} |")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
