"""/command -> HomeKit EVENT, one client at a time (docs/performance.md, "What HomeKit costs").

Starts `HEARTH serve` on loopback ports with one simulated thermostat (`hearth-dev simulate`, which it builds), pairs
aiohomekit with it by address (tests/homekit/driver.py), subscribes to the thermostat's
TargetTemperature, then for each round POSTs /command set_temperature (alternating 20 and 21)
and times until aiohomekit has the EVENT. Prints the percentiles as JSON.

Usage, with the venv .ci/aiohomekit.sh makes:
    $(bash .ci/aiohomekit.sh | tail -1) scripts/homekit-bench.py "$(scripts/build-static.sh)" tests/homekit [ROUNDS]
"""
import asyncio, json, os, subprocess, sys, tempfile, time, urllib.request, statistics, socket
hearth, driver_dir = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
subprocess.run(["cargo", "build", "--release", "--locked", "--quiet", "--bin", "hearth-dev"], cwd=root, check=True)
simulator = os.path.join(root, "target", "release", "hearth-dev")
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 200
sys.path.insert(0, driver_dir)
import driver
from aiohomekit.controller.ip.pairing import IpPairing

def free():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def http(port, path, body=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())

async def main():
    d = tempfile.mkdtemp(); dp, cp = free(), free()
    env = dict(os.environ, RUST_LOG="warn")
    srv = subprocess.Popen([hearth, "serve", "--bind", "127.0.0.1", "--device-port", str(dp), "--control-port", str(cp),
                            "--api-origin", "http://127.0.0.1", "--homekit-port", "0", "--data-dir", d + "/data"], env=env)
    sim = None
    try:
        for _ in range(100):
            try: http(cp, "/health"); break
            except Exception: time.sleep(0.05)
        sim = subprocess.Popen([simulator, "simulate", "--server", f"http://127.0.0.1:{dp}", "--devices", "1", "--seconds", "600"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        serial = None
        for _ in range(200):
            devs = http(cp, "/api/devices").get("devices", [])
            if devs: serial = devs[0]["serial"]; break
            time.sleep(0.05)
        hk = http(cp, "/api/homekit"); port = hk["port"]
        path = d + "/pairing.json"
        await driver.pair("127.0.0.1", port, hk["setup_code"], path)
        data = json.load(open(path)); data["AccessoryPort"] = port
        pairing = IpPairing(driver.Controller(), data)
        events = asyncio.Queue(); pairing.dispatcher_connect(events.put_nowait)
        accs = await pairing.list_accessories_and_characteristics()
        target = None
        for a in accs:
            for s in a["services"]:
                for c in s["characteristics"]:
                    if c["type"].upper().startswith("00000035") and a["aid"] != 1:
                        target = (a["aid"], c["iid"])
        await pairing.subscribe([target])
        while not events.empty(): events.get_nowait()
        times = []; answered = []
        loop = asyncio.get_running_loop()
        for i in range(rounds):
            value = 20.0 + (i % 2)
            t0 = time.perf_counter()
            await loop.run_in_executor(None, http, cp, "/command", {"serial": serial, "command": "set_temperature", "value": value})
            answered.append((time.perf_counter() - t0) * 1000)
            while True:
                ev = await asyncio.wait_for(events.get(), 10)
                if ev and target in ev and ev[target].get("value") == value: break
            times.append((time.perf_counter() - t0) * 1000)
        times.sort()
        p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
        print(json.dumps({"rounds": rounds, "p50_ms": round(p(0.5), 2), "p90_ms": round(p(0.9), 2), "p99_ms": round(p(0.99), 2),
                          "max_ms": round(times[-1], 2),
                          "command_answered_p50_ms": round(sorted(answered)[len(answered)//2], 2)}))
        await pairing.close()
    finally:
        if sim: sim.kill()
        srv.terminate(); srv.wait()

asyncio.run(main())
