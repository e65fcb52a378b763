"""Pair-setup under a flood of M1s (docs/performance.md, "Pair-setup under a neighbour's M1s").

Starts `HEARTH serve` on loopback ports (HomeKit listens there too), then:

1. CPU: for SECONDS each, pair-setup M1 sent in a loop (a) on one connection, (b) on a new
   connection each time, (c) on two connections in turn; the server's CPU time over the wall
   time (from /proc/PID/stat), how many M1s were answered and how (M2, Busy, ...).
2. The owner under a flood: another host (127.0.0.2) sends M1 every second on two connections
   in turn; meanwhile the owner pairs with the right code through aiohomekit (as
   tests/homekit/driver.py does), once at once and once typing the code for 12 s between M2
   and M3 (Home Assistant's HomeKit Controller asks for the code after M2). Says whether each
   paired and how long it took; `hearth homekit reset`-like state is restored between by
   removing the pairing (the data directory is new for each).

Usage, with the venv .ci/aiohomekit.sh makes (the owner's part needs aiohomekit):
    $(bash .ci/aiohomekit.sh | tail -1) scripts/homekit-m1-flood.py BINARY tests/homekit [SECONDS]
"""
import asyncio, json, os, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request, uuid

hearth, driver_dir = sys.argv[1], sys.argv[2]
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 10.0
sys.path.insert(0, driver_dir)

M1 = bytes([6, 1, 1, 0, 1, 0])  # kTLVType_State = 1, kTLVType_Method = 0
REQUEST = b"POST /pair-setup HTTP/1.1\r\nHost: x\r\nContent-Type: application/pairing+tlv8\r\nContent-Length: 6\r\n\r\n" + M1
ERRORS = {1: "Unknown", 2: "Authentication", 3: "Backoff", 4: "MaxPeers", 5: "MaxTries", 6: "Unavailable", 7: "Busy"}


def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def http(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


def ticks(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, after the state field


def connect(port, source="127.0.0.1"):
    s = socket.socket()
    s.bind((source, 0))
    s.connect(("127.0.0.1", port))
    s.settimeout(10)
    return s


def m1(s):
    """One M1 on `s`: the answer's kind (M2, or the error's name)."""
    s.sendall(REQUEST)
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        if not chunk: raise ConnectionError("closed")
        buf += chunk
    head, body = buf.split(b"\r\n\r\n", 1)
    length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0].split(b":")[1])
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk: raise ConnectionError("closed")
        body += chunk
    tlv, i = {}, 0
    while i < len(body):
        t, n = body[i], body[i + 1]; tlv[t] = tlv.get(t, b"") + body[i + 2:i + 2 + n]; i += 2 + n
    if 7 in tlv: return ERRORS.get(tlv[7][0], str(tlv[7][0]))
    return "M2" if tlv.get(6) == b"\x02" else "?"


class Server:
    def __init__(self):
        self.dir = tempfile.mkdtemp()
        self.control = free()
        env = dict(os.environ, RUST_LOG="warn")
        self.proc = subprocess.Popen([hearth, "serve", "--bind", "127.0.0.1", "--device-port", str(free()),
                                      "--control-port", str(self.control), "--api-origin", "http://127.0.0.1",
                                      "--homekit-port", "0", "--data-dir", self.dir + "/data"], env=env)
        for _ in range(200):
            try: http(self.control, "/health"); break
            except Exception: time.sleep(0.05)
        self.homekit = http(self.control, "/api/homekit")

    def stop(self):
        self.proc.terminate(); self.proc.wait(); shutil.rmtree(self.dir, ignore_errors=True)


def cpu(kind):
    srv = Server()
    port, answers = srv.homekit["port"], {}
    conns = [connect(port)] if kind == "one connection" else [connect(port), connect(port)] if kind == "two in turn" else []
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0, i = time.monotonic(), ticks(srv.proc.pid), 0
    while time.monotonic() - t0 < seconds:
        try:
            if kind == "new connection each":
                with connect(port) as s: got = m1(s)
            else:
                got = m1(conns[i % len(conns)])
        except OSError as e:
            got = type(e).__name__
        answers[got] = answers.get(got, 0) + 1; i += 1
    wall, used = time.monotonic() - t0, (ticks(srv.proc.pid) - c0) / hz
    for s in conns: s.close()
    srv.stop()
    return {"loop": kind, "m1s": i, "answers": answers, "server_cpu_s": round(used, 2),
            "cores": round(used / wall, 3), "cpu_ms_per_m1": round(1000 * used / max(i, 1), 3)}


async def owner_pairs(port, code, typing):
    import driver
    from aiohomekit.controller.ip.connection import HomeKitConnection
    from aiohomekit.protocol import perform_pair_setup_part1, perform_pair_setup_part2
    connection = HomeKitConnection(None, ["127.0.0.1"], port)
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(connection.ensure_connection(), 10)
        salt, public_key = await driver.drive(connection, perform_pair_setup_part1(False))
        await asyncio.sleep(typing)
        await driver.drive(connection, perform_pair_setup_part2(code, str(uuid.uuid4()), salt, public_key))
        return {"paired": True, "seconds": round(time.monotonic() - t0, 2)}
    except Exception as e:
        return {"paired": False, "error": type(e).__name__, "seconds": round(time.monotonic() - t0, 2)}
    finally:
        await connection.close()


def flood(port, stop, answers):
    conns = [connect(port, "127.0.0.2"), connect(port, "127.0.0.2")]
    i = 0
    while not stop.wait(0 if i == 0 else 1.0):
        try:
            got = m1(conns[i % 2])
        except Exception as e:
            got = type(e).__name__
            conns[i % 2] = connect(port, "127.0.0.2")
        answers[got] = answers.get(got, 0) + 1; i += 1
    for s in conns: s.close()


def owner(typing, tries=3):
    srv = Server()
    port, code = srv.homekit["port"], srv.homekit["setup_code"]
    stop, answers, attempts = threading.Event(), {}, []
    t = threading.Thread(target=flood, args=(port, stop, answers)); t.start()
    time.sleep(2.5)  # the flood is under way
    for _ in range(tries):
        got = asyncio.run(owner_pairs(port, code, typing))
        attempts.append(got)
        if got["paired"]: break
    stop.set(); t.join()
    paired = http(srv.control, "/api/homekit")["pairings"]
    srv.stop()
    return {"owner_types_for_s": typing, "attempts": attempts, "pairings": paired, "flood_answers": answers}


results = []
for kind in ["one connection", "new connection each", "two in turn"]:
    results.append(cpu(kind)); print(json.dumps(results[-1]), file=sys.stderr, flush=True)
try:
    import aiohomekit  # noqa: F401
    results += [owner(0), owner(12)]
except ImportError:
    results.append({"owner": "skipped: no aiohomekit in this python"})
for r in results: print(json.dumps(r))
