#!/usr/bin/env python3
"""The file probes of issue 23, replayed against a running `seam serve`.

    python3 bench/probe_files.py --seam PATH [--out FILE]

Each probe starts `seam serve --transport http` on a loopback port with a
small composition of its own in a temp folder, does what an attacker or a
careless edit would do to the files, and reports seam's peak RSS (VmHWM of
the process), its open fds, whether `/healthz` answered during the probe and
within a second after it, and whether the reload path is still alive after
it (a good edit applies). Then `seam validate` on large and pathological
files, timed. Loopback only; every wait is bounded; the script stops by
itself. Prints one Markdown table on stdout.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

MIB = 1024 * 1024


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


class Served:
    """`seam serve` over HTTP on a composition in its own folder."""

    def __init__(self, seam, text):
        self.dir = tempfile.mkdtemp(prefix="seam-probe-")
        self.file = os.path.join(self.dir, "c.yaml")
        self.write(text)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "seam.log"), "wb")
        env = dict(os.environ, RUST_LOG="warn")
        self.proc = subprocess.Popen(
            [seam, "serve", self.file, "--transport", "http", "--listen", f"127.0.0.1:{self.port}", "--debounce", "20ms"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        self.wait("seam to serve", lambda: self.get("/healthz", 0.5)[0] == 200)

    def write(self, text):
        tmp = self.file + ".tmp~"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, self.file)

    def get(self, path, timeout=1.0):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=timeout) as r:
                return r.status, r.read()
        except Exception as e:  # a probe reports what it saw, it does not stop
            return getattr(e, "code", 0) or 0, b""

    def status(self):
        code, body = self.get("/status", 5)
        return json.loads(body) if code == 200 else {}

    def outcomes(self):
        return (self.status().get("last_reload") or {}).get("at")

    def wait(self, what, fact, seconds=60):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if fact():
                return True
            time.sleep(0.02)
        print(f"probe: gave up waiting for {what}", file=sys.stderr)
        return False

    def next_outcome(self, before, seconds=60):
        """Waits for a reload outcome other than `before`; the outcome, or None."""
        got = {}

        def seen():
            last = self.status().get("last_reload") or {}
            if last.get("at") and last.get("at") != before:
                got.update(last)
                return True
            return False

        return got if self.wait("a reload outcome", seen, seconds) else None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


BASE = "seam: 1\nname: probe\nmounts:\n  skills: { kind: skills.fs, custom_dirs: [] }\n"


def edit_probe(seam, name, edit, setup=None, readers=0):
    """One probe: serve BASE, make `edit` (the text of c.yaml, given the
    folder after setup(dir); or None when it made the edit itself), watch RSS
    and /healthz until the reload's outcome, then check a good edit applies."""
    s = Served(seam, BASE)
    row = {"probe": name}
    try:
        if setup:
            setup(s.dir)
        hung = []
        for _ in range(readers):  # /events subscribers that never read
            c = socket.create_connection(("127.0.0.1", s.port))
            c.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode())
            hung.append(c)
        healthy = {"during": True}
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                if s.get("/healthz", 1.0)[0] != 200:
                    healthy["during"] = False
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        before = s.outcomes()
        started = time.monotonic()
        text = edit(s.dir)
        if text is not None:
            s.write(text)
        outcome = s.next_outcome(before)
        row["outcome"] = (outcome or {}).get("outcome", "none in 60 s")
        codes = sorted({d.get("code") for d in (outcome or {}).get("diagnostics", [])})
        row["codes"] = ",".join(c for c in codes if c) or "-"
        row["outcome s"] = f"{time.monotonic() - started:.2f}"
        stop.set()
        watcher.join()
        status, page = s.get("/status", 5)[1], s.get("/ui", 5)[1]
        row["/status KB"] = len(status) // 1024
        row["/ui KB"] = len(page) // 1024
        with open("/etc/passwd", "rb") as f:
            first = f.readline().strip()
        row["quotes /etc/passwd"] = "YES" if first in status or first in page else "no"
        row["peak RSS MB"] = round(proc_kib(s.proc.pid, "VmHWM") / 1024, 1)
        row["RSS after MB"] = round(proc_kib(s.proc.pid, "VmRSS") / 1024, 1)
        row["fds"] = fds(s.proc.pid)
        for c in hung:
            c.close()
        row["healthz during"] = "yes" if healthy["during"] else "NO"
        row["healthz after"] = "yes" if s.get("/healthz", 1.0)[0] == 200 else "NO"
        before = s.outcomes()
        s.write(BASE.replace("name: probe", "name: probe-after"))
        after = s.next_outcome(before, 30)
        row["next edit"] = (after or {}).get("outcome", "WEDGED")
    finally:
        s.stop()
    return row


def keys_composition(size):
    """A composition of `size` bytes of distinct keys (the issue's 50 MB probe)."""
    lines = ["seam: 1", "x-keys:"]
    total, i = 16, 0
    while total < size:
        line = f"  k{i:09d}: {i}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def validate_probe(seam, name, text, args=()):
    d = tempfile.mkdtemp(prefix="seam-probe-")
    path = os.path.join(d, "v.yaml")
    with open(path, "w") as f:
        f.write(text)
    started = time.monotonic()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", seam, "validate", *args, path],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    took = time.monotonic() - started
    peak = int(out.stderr.decode().strip().splitlines()[-1]) // 1024
    shutil.rmtree(d, ignore_errors=True)
    code = next((w.split("[")[1].split("]")[0] for w in (out.stdout + out.stderr).decode().split() if "error[" in w), "-")
    return {"probe": name, "outcome": f"exit {out.returncode}", "codes": code, "outcome s": f"{took:.2f}",
            "peak RSS MB": peak, "output KB": (len(out.stdout) + len(out.stderr)) // 1024}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--seam", required=True)
    a = p.parse_args()
    seam = os.path.abspath(a.seam)
    rows = []

    def fifo(d):
        os.mkfifo(os.path.join(d, "fifo.yaml"))

    rows.append(edit_probe(seam, "extends: [/dev/zero]", lambda d: BASE + "extends: [/dev/zero]\n"))
    rows.append(edit_probe(seam, "extends: [/dev/urandom]", lambda d: BASE + "extends: [/dev/urandom]\n"))
    rows.append(edit_probe(seam, "extends: [a FIFO]", lambda d: BASE + "extends: [fifo.yaml]\n", setup=fifo))
    rows.append(edit_probe(seam, "a 100 MB line", lambda d: BASE + "description: " + "x" * (100 * MIB) + "\n"))
    rows.append(edit_probe(seam, "a 3.9 MiB line with an error, 40 idle /events",
                           lambda d: BASE + "bogus: " + "x" * (39 * MIB // 10) + "\n", readers=40))
    rows.append(edit_probe(seam, "a 50 MB composition of keys", lambda d: keys_composition(50 * 1000 * 1000)))
    def symlink(d):
        os.symlink("/etc/passwd", os.path.join(d, "link~"))
        os.replace(os.path.join(d, "link~"), os.path.join(d, "c.yaml"))

    rows.append(edit_probe(seam, "c.yaml made a symlink to /etc/passwd", symlink))

    errors = "seam: 1\n" + "".join(f"bad{i}\x1b[31m: 1\n" for i in range(20000))
    rows.append(validate_probe(seam, "validate: 20,000 diagnostics, human", errors))
    rows.append(validate_probe(seam, "validate: 20,000 diagnostics, json", errors, ["--format", "json"]))
    rows.append(validate_probe(seam, "validate: 3.9 MB of keys (under the budget)", keys_composition(39 * MIB // 10)))
    rows.append(validate_probe(seam, "validate: 50 MB of keys", keys_composition(50 * 1000 * 1000)))

    columns = ["probe", "outcome", "codes", "outcome s", "peak RSS MB", "RSS after MB", "fds", "/status KB", "/ui KB",
               "healthz during", "healthz after", "next edit", "quotes /etc/passwd", "output KB"]
    print("| " + " | ".join(columns) + " |")
    print("|" + " --- |" * len(columns))
    for r in rows:
        print("| " + " | ".join(str(r.get(c, "")) for c in columns) + " |")


if __name__ == "__main__":
    main()
