#!/usr/bin/env python3
"""Regenerates cross/link-order.ld, the linker script that puts the code hearth runs at start-up,
while idle and while serving thermostats next to each other at the front of the binary.

Why: the kernel maps a binary's code into a process 64 KB at a time around each page it runs
(fault-around), so code that is run is resident with everything linked near it. Left to the
linker, start-up and idle code is spread over most of the 3.6 MB text, and a server that is
only waiting had about 2.7 MB of its code resident. Listed first, it fits in a few hundred KB.

How: builds the static release binary with symbols, runs `hearth serve` under valgrind's
callgrind twice (start-up and idle; then with simulated thermostats and control API calls),
and lists every function that ran: first those of the idle run, then the rest. Rust symbols
are written with their hashes as wildcards, so the list survives rebuilds, other rustc
versions (hearth's own crates and dependencies) and other targets; C functions from the static
C library are named by their archive member. A name that matches nothing costs nothing.

Needs valgrind and python3. Run from anywhere:  python3 scripts/link-order.py
The binaries that use the script: scripts/bench.sh and cross/build.sh (see cross/config.toml).
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "cross", "link-order.ld")
TARGET_DIR = os.path.join(ROOT, "target", "link-order")
DEVICE_PORT, CONTROL_PORT = 18400, 18401


def host_triple():
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return re.search(r"^host: (\S+)", out, re.M).group(1)


def build(triple):
    env = dict(os.environ)
    env.update(
        CARGO_TARGET_DIR=TARGET_DIR,
        CARGO_PROFILE_RELEASE_STRIP="false",
        RUSTFLAGS="-C target-feature=+crt-static",
    )
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "--bin", "hearth", "--bin", "hearth-dev", "--target", triple], cwd=ROOT, env=env, check=True
    )
    return os.path.join(TARGET_DIR, triple, "release", "hearth")


def wait_health(seconds):
    until = time.time() + seconds
    while time.time() < until:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{CONTROL_PORT}/health", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    sys.exit("the server under valgrind did not answer /health")


def call(method, path, body=None):
    req = urllib.request.Request(
        f"http://127.0.0.1:{CONTROL_PORT}{path}",
        data=body.encode() if body else None,
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.read()
    except OSError:
        return b""


def profile(binary, work, load):
    """Runs the server under callgrind (idle, or with `load`) and returns the functions that ran."""
    out = os.path.join(work, "callgrind.out")
    data = tempfile.mkdtemp(dir=work)
    server = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no",
         f"--callgrind-out-file={out}", binary, "serve", "--bind", "127.0.0.1",
         "--api-origin", f"http://127.0.0.1:{DEVICE_PORT}", "--device-port", str(DEVICE_PORT),
         "--control-port", str(CONTROL_PORT), "--data-dir", data],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_health(120)
        if load:
            load(binary)
        else:
            time.sleep(5)  # the idle threads' loops and a maintenance tick
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=120)
    names = []
    with open(out, errors="replace") as f:
        for line in f:
            if line.startswith("fn="):
                name = re.sub(r"^fn=(\(\d+\) )?", "", line.strip())
                # callgrind names a recursive call's inner levels fn'2, fn'3, ...: the same
                # function (and a quote is not valid in a linker script).
                name = re.sub(r"'\d+$", "", name)
                if name and name not in names:
                    names.append(name)
    return names


def serving(binary):
    """Simulated thermostats (entry, upload, held subscribes, pushes) and control API calls."""
    sim = subprocess.Popen(
        [binary + "-dev", "simulate", "--server", f"http://127.0.0.1:{DEVICE_PORT}", "--devices", "3",
         "--seconds", "40"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    time.sleep(20)
    for _ in range(3):
        devices = call("GET", "/api/devices")
        for serial in re.findall(rb'"serial":"([0-9A-Z]+)"', devices)[:3]:
            s = serial.decode()
            call("GET", f"/status?serial={s}")
            call("POST", "/command", f'{{"serial":"{s}","command":"set_temperature","value":21.5}}')
            call("POST", "/command", f'{{"serial":"{s}","command":"set_mode","value":"heat"}}')
        call("GET", "/info")
        time.sleep(2)
    sim.wait(timeout=60)


def archive_members():
    """C symbol -> `archive:member` for the static C library, math library and unwinder."""
    libs = subprocess.run(
        ["cc", "-print-file-name=libc.a"], capture_output=True, text=True
    ).stdout.strip()
    archives = [libs, libs.replace("libc.a", "libm.a")]
    gcc_eh = subprocess.run(
        ["cc", "-print-file-name=libgcc_eh.a"], capture_output=True, text=True
    ).stdout.strip()
    archives.append(gcc_eh)
    members = {}
    for archive in archives:
        if not os.path.isfile(archive):
            continue
        nm = subprocess.run(["nm", "-A", "--defined-only", archive], capture_output=True, text=True)
        for line in nm.stdout.splitlines():
            m = re.match(r"^(.*?):([^:]+\.o):\s*[0-9a-f]*\s+[TtWwi]\s+(\S+)$", line)
            if m:
                members.setdefault(m.group(3), (os.path.basename(archive), m.group(2)))
    return members


def rust_pattern(name):
    """A glob matching this Rust symbol whatever its crate and instance hashes."""
    name = re.sub(r"\.llvm\.\d+$", "*", name)
    name = re.sub(r"17h[0-9a-f]{16}E", "17h*E", name)  # legacy mangling's hash
    name = re.sub(r"Cs[0-9A-Za-z]+_", "Cs*_", name)  # v0: crate hashes
    name = re.sub(r"B[0-9A-Za-z]*_", "B*_", name)  # v0: back-references move with them
    return name.replace("$", "?")


def main():
    triple = host_triple()
    binary = build(triple)
    with tempfile.TemporaryDirectory() as work:
        idle = profile(binary, work, None)
        busy = profile(binary, work, serving)
    ordered = idle + [n for n in busy if n not in set(idle)]
    members = archive_members()
    lines, seen = [], set()
    for name in ordered:
        if name.startswith("_ZN") or name.startswith("_R"):
            p = rust_pattern(name)
            entry = f"    *(.text.{p} .text.unlikely.{p})"
        elif name in members:
            archive, member = members[name]
            entry = f"    *{archive}:{member}(.text .text.*)"
        else:
            continue
        if entry not in seen:
            seen.add(entry)
            lines.append(entry)
    with open(OUT, "w") as f:
        f.write(
            "/* Generated by scripts/link-order.py (do not edit): the functions hearth runs at\n"
            " * start-up and while idle, then those it runs serving thermostats, placed first so\n"
            " * that the pages the kernel maps around them are mostly code that runs. */\n"
            "SECTIONS\n{\n  .text.hearth_hot :\n  {\n"
        )
        f.write("\n".join(lines))
        f.write("\n  }\n}\nINSERT BEFORE .text;\n")
    print(f"{OUT}: {len(lines)} entries ({len(idle)} functions idle, {len(ordered)} in all)")


if __name__ == "__main__":
    main()
