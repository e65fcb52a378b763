"""A paired controller coming back while neighbours hold HomeKit's unverified connections.

Starts `HEARTH serve` on loopback ports, pairs aiohomekit with it by address
(tests/homekit/driver.py), then has two neighbours (127.0.0.2 and 127.0.0.3) hold 8 and 4 idle
connections to the HomeKit port, each reopened as soon as the server closes it, and for each
round times a fresh session of the paired controller (from 127.0.0.1): connect, pair-verify and
read a characteristic. Prints the times as JSON; a round that takes over 30 s is reported as
null.

Usage, with the venv .ci/aiohomekit.sh makes:
    $(bash .ci/aiohomekit.sh | tail -1) scripts/homekit-crowd.py "$(scripts/build-static.sh)" tests/homekit [ROUNDS]
"""
import asyncio, errno, json, os, selectors, socket, subprocess, sys, tempfile, threading, time
import urllib.request

hearth, driver_dir = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
sys.path.insert(0, driver_dir)
import driver
from aiohomekit.controller.ip.pairing import IpPairing


def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def http(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
        return json.loads(r.read())


class Crowd(threading.Thread):
    """Idle connections from `sources` (address, count), reopened when closed."""

    def __init__(self, port, sources):
        super().__init__(daemon=True)
        self.port, self.sources, self.stop, self.reopened = port, sources, False, 0
        self.sel = selectors.DefaultSelector()

    def open(self, src):
        s = socket.socket(); s.setblocking(False); s.bind((src, 0))
        if s.connect_ex(("127.0.0.1", self.port)) not in (0, errno.EINPROGRESS):
            s.close(); return
        self.sel.register(s, selectors.EVENT_READ, src)

    def run(self):
        for src, n in self.sources:
            for _ in range(n):
                self.open(src)
        while not self.stop:
            for key, _ in self.sel.select(timeout=0.05):
                try:
                    data = key.fileobj.recv(1024)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    self.sel.unregister(key.fileobj); key.fileobj.close()
                    self.reopened += 1
                    self.open(key.data)


async def session_time(data):
    pairing = IpPairing(driver.Controller(), dict(data))
    t0 = time.perf_counter()
    try:
        await asyncio.wait_for(pairing.get_characteristics([(1, 5)]), 30)
        return round((time.perf_counter() - t0) * 1000, 1)
    except Exception as e:
        return f"{type(e).__name__} after {time.perf_counter() - t0:.1f} s"
    finally:
        await pairing.close()


async def main():
    d = tempfile.mkdtemp(); dp, cp = free(), free()
    srv = subprocess.Popen([hearth, "serve", "--bind", "127.0.0.1", "--device-port", str(dp),
                            "--control-port", str(cp), "--api-origin", "http://127.0.0.1",
                            "--homekit-port", "0", "--data-dir", d + "/data"],
                           env=dict(os.environ, RUST_LOG="warn"))
    try:
        for _ in range(200):
            try: http(cp, "/health"); break
            except Exception: time.sleep(0.05)
        hk = http(cp, "/api/homekit"); port = hk["port"]
        path = d + "/pairing.json"
        await driver.pair("127.0.0.1", port, hk["setup_code"], path)
        data = json.load(open(path)); data["AccessoryPort"] = port
        quiet = [await session_time(data) for _ in range(3)]
        crowd = Crowd(port, [("127.0.0.2", 8), ("127.0.0.3", 4)])
        crowd.start()
        time.sleep(1)  # the crowd holds its 12 before the controller comes back
        crowded = [await session_time(data) for _ in range(rounds)]
        crowd.stop = True
        print(json.dumps({"quiet_ms": quiet, "crowded_ms": crowded,
                          "crowd_connections_closed_and_reopened": crowd.reopened}))
    finally:
        srv.terminate(); srv.wait()

asyncio.run(main())
