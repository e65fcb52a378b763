"""A real HomeKit controller (aiohomekit) driven by tests/it/homekit_pairing.rs.

    driver.py pair HOST PORT CODE PAIRING_FILE
        pair-setup by address (no mDNS): prints {"ok": true} and writes the pairing data, or
        prints {"error": "<exception class>"}.
    driver.py pair-typing HOST PORT CODE PAIRING_FILE
        the same, with a person typing the code between M2 and M3 (as Home Assistant asks for
        it after M2): after M2 prints {"m2": true, "salt": "<hex>"}, then waits for a line on
        stdin before sending M3.
    driver.py session PAIRING_FILE PORT
        pair-verify with the stored pairing, then reads one JSON command a line on stdin and
        answers each with one JSON line on stdout:
        {"op": "accessories"}                       -> {"accessories": [...]}
        {"op": "get", "ids": [[aid, iid], ...]}     -> {"values": [[aid, iid, value], ...]}
        {"op": "put", "values": [[aid, iid, v]]}    -> {"status": {...}}
        {"op": "subscribe", "ids": [[aid, iid]]}    -> {"ok": true} (and forgets the events
                                                       aiohomekit made of its own writes)
        {"op": "event", "timeout": seconds}         -> {"event": [[aid, iid, value], ...]} or
                                                       {"event": null} at the timeout
        {"op": "list_pairings"}                     -> {"pairings": [...]}
        {"op": "remove_pairing", "id": "..."}       -> {"ok": true}
        {"op": "ios_id"}                            -> {"id": "..."}
        A failing command answers {"error": "<exception class>: <message>"}.

Only aiohomekit's public protocol pieces and its connection classes are used, as its own
IpDiscovery does after mDNS has found an address.
"""

import asyncio
import json
import sys
import uuid

from aiohomekit.characteristic_cache import CharacteristicCacheMemory
from aiohomekit.controller.ip.connection import HomeKitConnection
from aiohomekit.controller.ip.pairing import IpPairing
from aiohomekit.protocol import perform_pair_setup_part1, perform_pair_setup_part2


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def drive(connection, machine):
    request, expected = machine.send(None)
    while True:
        response = await connection.post_tlv("/pair-setup", body=request, expected=expected)
        try:
            request, expected = machine.send(response)
        except StopIteration as done:
            return done.value


async def pair(host, port, code, path, typing=False):
    connection = HomeKitConnection(None, [host], port)
    try:
        await asyncio.wait_for(connection.ensure_connection(), 10)
        salt, public_key = await drive(connection, perform_pair_setup_part1(False))
        if typing:
            say({"m2": True, "salt": salt.hex()})
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        pairing = await drive(
            connection, perform_pair_setup_part2(code, str(uuid.uuid4()), salt, public_key)
        )
    except Exception as e:  # the test reads which
        say({"error": type(e).__name__})
        return
    finally:
        await connection.close()
    pairing.update(
        {"AccessoryIP": host, "AccessoryIPs": [host], "AccessoryPort": port, "Connection": "IP"}
    )
    with open(path, "w") as f:
        json.dump(pairing, f)
    say({"ok": True})


class Controller:
    """What IpPairing asks of its controller: a characteristic cache."""

    def __init__(self):
        self._char_cache = CharacteristicCacheMemory()


async def session(path, port):
    with open(path) as f:
        data = json.load(f)
    data["AccessoryPort"] = port
    pairing = IpPairing(Controller(), data)
    events = asyncio.Queue()
    pairing.dispatcher_connect(events.put_nowait)
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        command = json.loads(line)
        op = command["op"]
        try:
            if op == "accessories":
                say({"accessories": await pairing.list_accessories_and_characteristics()})
            elif op == "get":
                got = await pairing.get_characteristics([tuple(i) for i in command["ids"]])
                say({"values": [[a, i, v.get("value")] for (a, i), v in sorted(got.items())]})
            elif op == "put":
                status = await pairing.put_characteristics([tuple(v) for v in command["values"]])
                say({"status": {f"{a}.{i}": s for (a, i), s in status.items()}})
            elif op == "subscribe":
                await pairing.subscribe([tuple(i) for i in command["ids"]])
                # aiohomekit tells its listeners of its own writes: only what comes after the
                # subscription is the accessory's.
                while not events.empty():
                    events.get_nowait()
                say({"ok": True})
            elif op == "event":
                try:
                    while True:
                        event = await asyncio.wait_for(events.get(), command["timeout"])
                        if event:  # an empty event marks a (re)connection
                            break
                    say({"event": [[a, i, v.get("value")] for (a, i), v in sorted(event.items())]})
                except asyncio.TimeoutError:
                    say({"event": None})
            elif op == "list_pairings":
                say({"pairings": await pairing.list_pairings()})
            elif op == "remove_pairing":
                await pairing.remove_pairing(command["id"])
                say({"ok": True})
            elif op == "ios_id":
                say({"id": data["iOSPairingId"]})
            else:
                say({"error": f"unknown op {op}"})
        except Exception as e:
            say({"error": f"{type(e).__name__}: {e}"})
    await pairing.close()


def main():
    if sys.argv[1] in ("pair", "pair-typing"):
        typing = sys.argv[1] == "pair-typing"
        asyncio.run(pair(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], typing))
    elif sys.argv[1] == "session":
        asyncio.run(session(sys.argv[2], int(sys.argv[3])))
    else:
        sys.exit(f"unknown command {sys.argv[1]}")


if __name__ == "__main__":
    main()
