"""aiohomekit's own discovery and pairing, as Home Assistant's HomeKit Controller runs them, for
tests/it/homekit_mdns: python-zeroconf browses `_hap._tcp.local.` on every interface and
resolves the accessory (SRV, TXT, A); aiohomekit reads what it found (HomeKitService), pairs
with the setup code over the address and port found, and lists the accessories over the new
pairing.

    discover.py DEVICE_ID CODE [TIMEOUT]
        prints one JSON line: what aiohomekit found ({"name", "id", "address", "addresses",
        "port", "config_num", "state_num", "status_flags", "feature_flags", "category",
        "model", "protocol_version"}) and "accessories", the number listed once paired; or
        {"error": "<exception class>: <message>"}.
"""

import asyncio
import json
import sys

from aiohomekit.characteristic_cache import CharacteristicCacheMemory
from aiohomekit.controller.ip.controller import IpController
from aiohomekit.zeroconf import HAP_TYPE_TCP
from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceBrowser, AsyncZeroconf


async def main(device_id, code, timeout):
    azc = AsyncZeroconf(interfaces=InterfaceChoice.All, ip_version=IPVersion.V4Only)
    # Home Assistant's zeroconf integration runs the browser; aiohomekit finds it by its type.
    browser = AsyncServiceBrowser(azc.zeroconf, [HAP_TYPE_TCP], handlers=[lambda **_: None])
    controller = IpController(char_cache=CharacteristicCacheMemory(), zeroconf_instance=azc)
    try:
        await controller.async_start()
        discovery = await controller.async_find(device_id, timeout)
        d = discovery.description
        found = {
            "name": d.name,
            "id": d.id,
            "address": d.address,
            "addresses": d.addresses,
            "port": d.port,
            "config_num": d.config_num,
            "state_num": d.state_num,
            "status_flags": int(d.status_flags),
            "feature_flags": int(d.feature_flags),
            "category": int(d.category),
            "model": d.model,
            "protocol_version": d.protocol_version,
        }
        finish = await discovery.async_start_pairing("hearth")
        pairing = await finish(code)
        found["accessories"] = len(await pairing.list_accessories_and_characteristics())
        await pairing.close()
        print(json.dumps(found), flush=True)
    except Exception as e:  # the test reads which
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
    finally:
        await controller.async_stop()
        await browser.async_cancel()
        await azc.async_close()


if __name__ == "__main__":
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
    asyncio.run(main(sys.argv[1], sys.argv[2], timeout))
