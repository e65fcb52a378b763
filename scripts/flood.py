#!/usr/bin/env python3
"""A hostile LAN against a running hearth, on this machine's loopback addresses.

N attacking addresses (127.0.0.10 and up) each hold P idle connections to each port (TCP
connections that never send a byte), and open a new one whenever the server closes one, for
as long as the run lasts. Meanwhile a client from an address of its own (127.0.0.200) asks
/health on both ports, one request at a time, and the run reports how many were answered 200,
the slowest answer, and how the server's log grew each minute.

    scripts/flood.py --device 127.0.0.1:8000 --control 127.0.0.1:8082 --log hearth.log \
        --addresses 8 --per-port 64 --seconds 180 [--pid PID]

Exit status 0 when every /health was answered 200 within --within seconds (default 1) and the
server (--pid) is still alive at the end. Nothing leaves the machine: every address is a
127.0.0.x address of the loopback interface.
"""

import argparse
import errno
import os
import selectors
import socket
import sys
import time


def parse_addr(text):
    host, port = text.rsplit(":", 1)
    return host, int(port)


class Attackers:
    """Idle connections from many source addresses, reopened when closed."""

    def __init__(self, sources, targets, per_port):
        self.sel = selectors.DefaultSelector()
        self.opened = 0
        self.closed = 0
        self.failed = 0
        for src in sources:
            for target in targets:
                for _ in range(per_port):
                    self.open(src, target)

    def open(self, src, target):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((src, 0))
            err = s.connect_ex(target)
        except OSError:
            s.close()
            self.failed += 1
            return
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.failed += 1
            return
        self.sel.register(s, selectors.EVENT_READ, (src, target))
        self.opened += 1

    def run_for(self, seconds):
        """Reopens what the server closed, for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            for key, _ in self.sel.select(timeout=min(left, 0.05)):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    data = b""
                if data:
                    # A 503 or a TLS alert: the end follows.
                    continue
                self.sel.unregister(s)
                s.close()
                self.closed += 1
                self.open(*key.data)


def health(src, target, timeout):
    """GET /health from `src`: (status, seconds) or (error, seconds)."""
    start = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind((src, 0))
        s.connect(target)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = b""
        while b"\r\n" not in answer:
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
        status = answer.split(b" ", 2)[1].decode() if answer.startswith(b"HTTP/") else "none"
    except OSError as e:
        status = type(e).__name__
    finally:
        s.close()
    return status, time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", type=parse_addr, required=True)
    p.add_argument("--control", type=parse_addr, required=True)
    p.add_argument("--log", help="the server's log file, to measure its growth")
    p.add_argument("--pid", type=int, help="the server's process, alive at the end?")
    p.add_argument("--addresses", type=int, default=8)
    p.add_argument("--per-port", type=int, default=64)
    p.add_argument("--seconds", type=float, default=180)
    p.add_argument("--within", type=float, default=1.0)
    p.add_argument("--prober", default="127.0.0.200")
    args = p.parse_args()

    sources = [f"127.0.0.{10 + i}" for i in range(args.addresses)]
    targets = [args.device, args.control]
    log_size = lambda: os.path.getsize(args.log) if args.log else 0
    size_at_start = log_size()
    attackers = Attackers(sources, targets, args.per_port)
    print(f"{len(sources)} addresses x {args.per_port} idle connections x 2 ports: "
          f"{attackers.opened} opened ({attackers.failed} could not be)", flush=True)

    began = time.monotonic()
    minute_start, minute_size = began, log_size()
    growth = []
    probes = {"device": [], "control": []}
    while time.monotonic() - began < args.seconds:
        for name, target in (("device", args.device), ("control", args.control)):
            probes[name].append(health(args.prober, target, args.within * 5))
            attackers.run_for(0.05)
        attackers.run_for(0.2)
        if time.monotonic() - minute_start >= 60:
            size = log_size()
            growth.append(size - minute_size)
            minute_start, minute_size = time.monotonic(), size
    alive = True
    if args.pid:
        try:
            os.kill(args.pid, 0)
        except OSError:
            alive = False

    ok = alive
    for name, results in probes.items():
        good = [t for status, t in results if status == "200"]
        slow = [t for status, t in results if status == "200" and t > args.within]
        bad = [(status, round(t, 3)) for status, t in results if status != "200"]
        worst = max((t for _, t in results), default=0)
        print(f"{name}: {len(results)} /health, {len(good)} answered 200, "
              f"{len(slow)} of them slower than {args.within} s, slowest {worst * 1000:.1f} ms; "
              f"not 200: {bad[:10]}{' ...' if len(bad) > 10 else ''}")
        ok &= not slow and not bad
    print(f"attackers' connections closed by the server and reopened: {attackers.closed}")
    if args.log:
        print(f"log growth per minute (bytes): {growth}; in all {log_size() - size_at_start}")
        ok &= all(g < 100_000 for g in growth)
    print(f"server alive at the end: {alive}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
