"""Probes `seam serve --transport http` the way issue 23 found it unbounded.

    python3 bench/probe_http.py --seam PATH [--composition FILE] [--quick] [--only idle,slowloris,bodies]

Starts seam on a loopback port (its stderr names it) and replays, one after
the other:
  idle      PROBE_IDLE (20000) connections opened and held, sending nothing;
  slowloris PROBE_SLOW (200) connections sending a request head one header
            line every 2 s, never ending it;
  bodies    PROBE_BODIES (300) connections each POSTing a 4 MiB body
            (Content-Length 4194304, `max_request_bytes` by default) at
            PROBE_BODY_RATE (256) KiB/s, reading the answer as it comes.
Each probe is held for PROBE_HOLD seconds (35: past the default header
timeout, 30 s) unless all its connections ended sooner. For each it prints
seam's peak RSS (VmRSS sampled every 20 ms) and open descriptors, how
/healthz answered on fresh connections during the probe (a try every 5 s, 1 s
to answer), and how soon after the probe's connections were closed /healthz
answered again. Loopback only; bounded in connections and time; stops seam
and itself at the end (PROBE_DEADLINE, 300 s, stops everything). Standard
library only, so that it can be folded into another runner as it is.
"""

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

MIB = 1 << 20


def env_int(name, default):
    return int(os.environ.get(name, default))


class Seam:
    """The seam process, its address, and samples of its RSS and descriptors."""

    def __init__(self, binary, composition):
        self.proc = subprocess.Popen(
            [binary, "serve", composition, "--transport", "http", "--listen", "127.0.0.1:0", "--no-watch"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")},
            start_new_session=True,
        )
        self.log = []
        started = time.monotonic()
        while True:
            line = self.proc.stderr.readline().decode(errors="replace")
            if not line:
                sys.exit("seam ended before serving:\n" + "".join(self.log))
            self.log.append(line)
            found = re.search(r"serving agent `default` at http://([0-9.]+):([0-9]+)/mcp", line)
            if found:
                self.host, self.port = found.group(1), int(found.group(2))
                break
            if time.monotonic() - started > 60:
                sys.exit("seam did not serve within 60 s")
        threading.Thread(target=self._drain, daemon=True).start()
        self.peak_rss = 0
        self.peak_fds = 0
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _drain(self):
        for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace"))

    def status(self, field):
        """A size from /proc/PID/status (`VmRSS`, `VmHWM`), in bytes."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def rss(self):
        return self.status("VmRSS")

    def hwm(self):
        return self.status("VmHWM")

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def _sample(self):
        tick = 0
        while not self._stop.is_set() and self.proc.poll() is None:
            try:
                self.peak_rss = max(self.peak_rss, self.rss())
                if tick % 10 == 0:
                    self.peak_fds = max(self.peak_fds, self.fds())
            except OSError:
                return
            tick += 1
            time.sleep(0.02)

    def reset_peaks(self):
        self.peak_rss, self.peak_fds = self.rss(), self.fds()

    def stop(self):
        self._stop.set()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def healthz(host, port, timeout=1.0):
    """One GET /healthz on a fresh connection: `200`, another status, `closed` or `timeout`."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            head = s.recv(64)
            if not head:
                return "closed"
            return head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.1 ") else "garbled"
    except (socket.timeout, TimeoutError):
        return "timeout"
    except ConnectionResetError:
        return "closed"
    except OSError as e:
        return f"error {e.errno}"


class Watch:
    """/healthz tried every `every` seconds on a thread of its own (so the driver's own load does not delay it)."""

    def __init__(self, seam, every=5.0):
        self.seam, self.every, self.results = seam, every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        self._stop.wait(1.0)
        while not self._stop.is_set():
            self.results.append(healthz(self.seam.host, self.seam.port))
            self._stop.wait(self.every)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.results


def answered_again(seam, limit=5.0):
    """Seconds until /healthz answers 200 again, or None within `limit`."""
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if healthz(seam.host, seam.port, timeout=0.5) == "200":
            return time.monotonic() - started
        time.sleep(0.02)
    return None


async def connect(host, port, attempts=200):
    """A connection; the driver's own descriptor limit is waited out, a refusal is None."""
    for _ in range(attempts):
        try:
            return await asyncio.wait_for(asyncio.open_connection(host, port), 10)
        except OSError as e:
            if e.errno in (24, 23):  # EMFILE, ENFILE: the driver's own limit; its closed sockets free it
                await asyncio.sleep(0.01)
                continue
            return None
        except asyncio.TimeoutError:
            return None
    return None


async def until_closed(reader):
    """Reads until seam closes the connection; what it sent."""
    got = b""
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return got
            got += chunk[: 256 - len(got)] if len(got) < 256 else b""
    except (ConnectionError, OSError):
        return got


class Run:
    """`n` copies of a connection's coroutine, held for up to `hold` seconds, then their connections closed."""

    def __init__(self):
        self.writers = []
        self.released = False  # from then on, a connection ends because the driver closed it

    async def hold(self, one, n, hold):
        """How many were still running when the hold ended."""
        tasks = [asyncio.create_task(one()) for _ in range(n)]
        done, _ = await asyncio.wait(tasks, timeout=hold)
        self.released = True
        for w in self.writers:
            w.close()
        await asyncio.wait(tasks, timeout=10)
        for t in tasks:
            t.cancel()
        return len(tasks) - len(done)


async def probe_idle(seam, n, hold):
    started = time.monotonic()
    run, refused_at_once, closed_later, failed = Run(), 0, [], 0
    gate = asyncio.Semaphore(500)

    async def one():
        nonlocal refused_at_once, failed
        async with gate:
            conn = await connect(seam.host, seam.port)
        if conn is None:
            failed += 1
            return
        reader, writer = conn
        t = time.monotonic()
        run.writers.append(writer)
        await until_closed(reader)
        writer.close()
        if run.released:
            return
        if time.monotonic() - t < 1.0:
            refused_at_once += 1
        else:
            closed_later.append(time.monotonic() - t)

    held = await run.hold(one, n, hold)
    return {
        "connections": n,
        "open at the end of the hold": held,
        "closed by seam at once (503)": refused_at_once,
        "closed by seam later": len(closed_later),
        "closed later after, median s": round(statistics.median(closed_later), 1) if closed_later else None,
        "failed to connect": failed,
        "seconds": round(time.monotonic() - started, 1),
    }


async def probe_slowloris(seam, n, hold):
    started = time.monotonic()
    run, closed_after = Run(), []

    async def one():
        conn = await connect(seam.host, seam.port)
        if conn is None:
            return
        reader, writer = conn
        run.writers.append(writer)
        t = time.monotonic()
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {seam.host}\r\n".encode())
        closed = asyncio.create_task(until_closed(reader))
        while not closed.done():
            try:
                writer.write(b"X-Slow: 1\r\n")
                await writer.drain()
            except (ConnectionError, OSError):
                break
            await asyncio.wait([closed], timeout=2.0)
        await closed
        if not run.released:
            closed_after.append(time.monotonic() - t)
        writer.close()

    await run.hold(one, n, hold)
    return {
        "connections": n,
        "closed by seam": len(closed_after),
        "closed after, median s": round(statistics.median(closed_after), 1) if closed_after else None,
        "seconds": round(time.monotonic() - started, 1),
    }


def padded_initialize(size):
    message = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
        }
    ).encode()
    return message + b" " * (size - len(message))


async def probe_bodies(seam, n, size, rate, hold):
    started = time.monotonic()
    body = memoryview(padded_initialize(size))
    run, statuses = Run(), {}
    step, pause = 64 * 1024, 64 * 1024 / rate

    async def one():
        conn = await connect(seam.host, seam.port)
        if conn is None:
            statuses["no connection"] = statuses.get("no connection", 0) + 1
            return
        reader, writer = conn
        run.writers.append(writer)
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: {seam.host}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n"
        )
        answer = asyncio.create_task(until_closed(reader))
        try:
            writer.write(head.encode())
            for at in range(0, size, step):
                if answer.done():
                    break
                writer.write(body[at : at + step])
                await writer.drain()
                await asyncio.wait([answer], timeout=pause)
        except (ConnectionError, OSError):
            pass
        got = await answer
        status = got.split(b" ")[1].decode() if got.startswith(b"HTTP/1.1 ") else "unanswered"
        statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    await run.hold(one, n, hold)
    return {
        "connections": n,
        "body MiB": size / MIB,
        "KiB/s each": rate // 1024,
        "answers": dict(sorted(statuses.items())),
        "seconds": round(time.monotonic() - started, 1),
    }


def settle(seam, baseline_fds, limit=15.0):
    """Waits until seam's descriptors are back near where they started."""
    started = time.monotonic()
    while time.monotonic() - started < limit and seam.fds() > baseline_fds + 4:
        time.sleep(0.1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seam", required=True)
    parser.add_argument("--composition", default="compositions/base.yaml")
    parser.add_argument("--quick", action="store_true", help="a tenth of the connections, 5 s holds")
    parser.add_argument("--only", default="idle,slowloris,bodies", help="the probes to run, by key")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    scale = 10 if args.quick else 1
    hold = 5 if args.quick else env_int("PROBE_HOLD", 35)
    deadline = env_int("PROBE_DEADLINE", 300)
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("PROBE_DEADLINE passed")))
    signal.alarm(deadline)

    seam = Seam(args.seam, args.composition)
    rows = []
    try:
        baseline_fds = seam.fds()
        rate = env_int("PROBE_BODY_RATE", 256)
        print(f"seam pid {seam.proc.pid} at http://{seam.host}:{seam.port}; descriptor limit {hard}; "
              f"RSS at start {seam.rss() / MIB:.1f} MiB, {baseline_fds} fds", flush=True)
        probes = [
            ("idle", f"{env_int('PROBE_IDLE', 20000) // scale} idle connections",
             lambda: probe_idle(seam, env_int("PROBE_IDLE", 20000) // scale, hold)),
            ("slowloris", f"{env_int('PROBE_SLOW', 200) // scale} slowloris heads",
             lambda: probe_slowloris(seam, env_int("PROBE_SLOW", 200) // scale, hold)),
            ("bodies", f"{env_int('PROBE_BODIES', 300) // scale} × 4 MiB bodies at {rate} KiB/s",
             lambda: probe_bodies(seam, env_int("PROBE_BODIES", 300) // scale, 4 * MIB, rate * 1024, hold)),
        ]
        only = args.only.split(",")
        for key, name, run in [p for p in probes if p[0] in only]:
            seam.reset_peaks()
            watch = Watch(seam)
            result = asyncio.run(run())
            during = watch.stop()
            again = answered_again(seam)
            rss_after = seam.rss()
            settle(seam, baseline_fds)
            row = {
                "probe": name,
                "peak RSS MiB": round(seam.peak_rss / MIB, 1),
                "RSS after MiB": round(rss_after / MIB, 1),
                "peak fds": seam.peak_fds,
                "healthz during": " ".join(during),
                "healthz after": f"{again * 1000:.0f} ms" if again is not None else "no answer in 5 s",
                "detail": result,
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        print(f"\nseam VmHWM (peak RSS over the whole run): {seam.hwm() / MIB:.1f} MiB\n")
        print("| probe | seam peak RSS | RSS after | peak fds | /healthz during (each try) | /healthz after |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in rows:
            print(f"| {r['probe']} | {r['peak RSS MiB']} MiB | {r['RSS after MiB']} MiB | {r['peak fds']} | "
                  f"{r['healthz during']} | {r['healthz after']} |")
        print()
        for r in rows:
            print(f"- {r['probe']}: {json.dumps(r['detail'])}")
    finally:
        seam.stop()
        signal.alarm(0)


if __name__ == "__main__":
    main()
