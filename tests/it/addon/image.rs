//! The add-on's image, as Home Assistant runs it. `podman run` does not work on these machines
//! (no RLIMIT_NPROC in their sandbox), so the test plays the container runtime: it builds the
//! image (`cross/addon.sh`, podman) or takes the one `HEARTH_ADDON_IMAGE` names (CI's static
//! build), reads the image's configuration back from the OCI archive, unpacks its one layer,
//! and runs the binary as the entrypoint says, with the image's environment, an
//! `options.json` from the manifest's defaults, and a fake Supervisor. It also plays the port
//! mapping (host port 9543 to the container's device port) and the ingress proxy.
//!
//! The "container" listens on its own loopback address, on free ports rather than the image's
//! 8000 and 8082 (a hearth or Python server running on this machine holds those on every
//! address), and the host port is 9543 unless something here holds that too.

use std::collections::BTreeSet;
use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::container::*;
use super::fake_supervisor::*;
use super::manifest::{addon_dir, yaml_file};
use crate::common::mqtt::{Broker, Watcher};
use crate::common::*;
/// The Home Assistant machine, as thermostats on the LAN see it (loopback stands in).
const HOST: &str = "127.77.230.1";
/// The add-on's container.
const CONTAINER: &str = "127.77.230.2";
const INGRESS_PATH: &str = "/api/hassio_ingress/0123abcd";

/// Home Assistant as the browser reaches it (Nabu Casa's remote access, say).
const HA_HOST: &str = "abcdef0123.ui.nabu.casa";
const HA_ORIGIN: &str = "https://abcdef0123.ui.nabu.casa";

/// A request as the Supervisor's ingress proxy sends it to the add-on
/// (`supervisor/api/ingress.py`): every header the browser sent to Home Assistant (`Host` and
/// `Origin` among them, Home Assistant's own), what Home Assistant's ingress view adds
/// (`X-Ingress-Path`, `X-Hass-Source`, `X-Forwarded-For/Host/Proto`), and the signed-in
/// person. From 127.0.0.1, which plays the proxy's address (`INGRESS_PROXY`). The whole answer.
fn ingress(
    control: std::net::SocketAddr,
    method: &str,
    target: &str,
    origin: Option<&str>,
    body: &str,
) -> String {
    use std::io::{Read, Write};
    let mut request = format!(
        "{method} {target} HTTP/1.1\r\nHost: {HA_HOST}\r\nAccept: */*\r\n\
         Sec-Fetch-Site: same-origin\r\nSec-Fetch-Mode: cors\r\n\
         Cookie: ingress_session=0123456789abcdef\r\n\
         X-Ingress-Path: {INGRESS_PATH}\r\nX-Hass-Source: core.ingress\r\n\
         X-Forwarded-For: 192.168.1.20, 172.30.32.1\r\nX-Forwarded-Host: {HA_HOST}\r\n\
         X-Forwarded-Proto: https\r\nX-Remote-User-Id: 8f3a\r\nX-Remote-User-Name: owner\r\n\
         Connection: close\r\n"
    );
    if let Some(origin) = origin {
        request.push_str(&format!("Origin: {origin}\r\n"));
    }
    if method != "GET" {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    let mut socket = TcpStream::connect(control).unwrap();
    socket.set_read_timeout(Some(TIMEOUT)).unwrap();
    socket.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn the_image_runs_as_home_assistant_runs_it() {
    let dir = TempDir::new("addon-image");
    let Some(archive) = image_archive(dir.path()) else {
        return;
    };
    let image = Image::unpack(&archive, dir.path());
    // Built here: the local add-on beside it is one Home Assistant builds (no image: to pull)
    // for the architecture there is a binary for.
    let local = dir.path().join("addon/hearth/config.yaml");
    if local.exists() {
        let local = yaml_file(&local);
        assert!(local.get("image").is_none(), "{local}");
        assert_eq!(local["arch"], json!([this_arch()]));
        assert_eq!(local["version"], env!("CARGO_PKG_VERSION"));
    }
    let version = env!("CARGO_PKG_VERSION");

    // What the image says about itself.
    assert_eq!(image.config["os"], "linux");
    let c = image.container();
    assert_eq!(c["Entrypoint"], json!(["/hearth", "serve"]));
    assert!(c["Cmd"].is_null(), "{}", c["Cmd"]);
    assert_eq!(
        keys(&c["ExposedPorts"]),
        BTreeSet::from(["8000/tcp", "8082/tcp"])
    );
    assert_eq!(keys(&c["Volumes"]), BTreeSet::from(["/data"]));
    assert_eq!(c["WorkingDir"], "/data");
    let labels = &c["Labels"];
    assert_eq!(labels["io.hass.arch"], this_arch());
    assert_eq!(labels["io.hass.version"], version);
    assert_eq!(labels["io.hass.type"], "app");
    assert_eq!(labels["org.opencontainers.image.version"], version);
    // Docker's health check, kept in the OCI configuration (cross/addon.sh puts it back there):
    // no shell in the image, so the command is exec'd as it stands.
    let health = &c["Healthcheck"];
    assert_eq!(
        health["Test"],
        json!(["CMD", "/hearth", "healthcheck"]),
        "{c}"
    );
    assert!(
        health["Retries"].as_u64().is_some_and(|r| r >= 1),
        "{health}"
    );
    let env = image.env();
    for wanted in [
        ("DATA_DIR", "/data"),
        ("OPTIONS_FILE", "/data/options.json"),
    ] {
        assert!(
            env.iter().any(|(k, v)| (k.as_str(), v.as_str()) == wanted),
            "{wanted:?} in {env:?}"
        );
    }
    // Nothing in it but the binary and the data directory, empty.
    let files: BTreeSet<String> = std::fs::read_dir(&image.rootfs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, BTreeSet::from(["data".into(), "hearth".into()]));
    assert_eq!(
        std::fs::read_dir(image.rootfs.join("data"))
            .unwrap()
            .count(),
        0
    );

    // Home Assistant around it: the thermostat port's host port, its MQTT broker (only the
    // add-on's user gets in) and its Supervisor.
    let (device_port, control_port) = (free_port(CONTAINER), free_port(CONTAINER));
    let (_mapped, host_port) = PortMap::start(HOST, 9543, &format!("{CONTAINER}:{device_port}"));
    let broker = Broker::with_user("addons", "Ohg5ee");
    let mut network = serde_json::Map::new();
    network.insert(format!("{device_port}/tcp"), json!(host_port));
    network.insert(format!("{control_port}/tcp"), Value::Null);
    let supervisor = FakeSupervisor::start(&[
        ("/network/info", network_info(HOST)),
        ("/addons/self/info", addon_info(Value::Object(network))),
        (
            "/services/mqtt",
            mqtt_service("127.0.0.1", broker.port, "addons", "Ohg5ee"),
        ),
    ]);
    let watcher = Watcher::connect_as(broker.port, Some(("addons", "Ohg5ee")));

    // The Configuration page as the Supervisor writes it: the manifest's defaults, with an
    // API key required (the sidebar still needs none).
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut options = yaml_file(&addon_dir().join("hearth/config.yaml"))["options"].clone();
    options["control_require_key"] = json!(true);
    std::fs::write(data.join("options.json"), options.to_string()).unwrap();

    let notify = dir.path().join("notify.sock");
    let ready = UnixDatagram::bind(&notify).unwrap();
    ready.set_read_timeout(Some(TIMEOUT)).unwrap();
    let log = dir.path().join("hearth.log");
    let entrypoint: Vec<&str> = c["Entrypoint"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut command = Command::new(image.rootfs.join(entrypoint[0].trim_start_matches('/')));
    command
        .args(&entrypoint[1..])
        .env_clear()
        .envs(env)
        // The container's /data and its working directory.
        .env("DATA_DIR", &data)
        .env("OPTIONS_FILE", data.join("options.json"))
        .current_dir(&data)
        // Inside the container hearth listens on every address; here, on the container's.
        .env("SERVER_HOST", CONTAINER)
        .env("SERVER_PORT", device_port.to_string())
        .env("CONTROL_PORT", control_port.to_string())
        // What the Supervisor gives every add-on; `http://supervisor` is the fake one.
        .env("SUPERVISOR_TOKEN", TOKEN)
        .env("SUPERVISOR_API", &supervisor.url)
        // The ingress proxy (172.30.32.2 in the add-on) is this test, which connects from
        // 127.0.0.1.
        .env("INGRESS_PROXY", "127.0.0.1")
        .env("NOTIFY_SOCKET", &notify)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut server = Running(command.spawn().unwrap());
    // The image's health check, run as Docker runs it: the entrypoint's environment, no shell.
    let checked = |what: &str| {
        let test = health["Test"].as_array().unwrap();
        let program = test[1].as_str().unwrap().trim_start_matches('/');
        let mut check = Command::new(image.rootfs.join(program));
        check
            .args(test[2..].iter().map(|a| a.as_str().unwrap()))
            .env_clear()
            .envs(image.env())
            .env("DATA_DIR", &data)
            .env("OPTIONS_FILE", data.join("options.json"))
            .env("CONTROL_HOST", CONTAINER)
            .env("CONTROL_PORT", control_port.to_string())
            .current_dir(&data);
        let out = check.output().unwrap();
        eprintln!(
            "health check, {what}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        out.status.code()
    };
    let mut buf = [0u8; 512];
    let log_text = || std::fs::read_to_string(&log).unwrap();
    let n = ready
        .recv(&mut buf)
        .unwrap_or_else(|e| panic!("no READY=1 from hearth ({e}); its log:\n{}", log_text()));
    let status = String::from_utf8_lossy(&buf[..n]).into_owned();
    let origin = format!("http://{HOST}:{host_port}");
    let entry = format!("{origin}/entry");
    assert!(
        status.starts_with("READY=1\n")
            && status.contains(&format!("STATUS=thermostats register at {entry}")),
        "{status:?}\n{}",
        log_text()
    );

    assert_eq!(checked("serving"), Some(0));

    // The device port's /info, reached as thermostats reach it, gives the host port's URL.
    let device = format!("{HOST}:{host_port}").parse().unwrap();
    let info = get(device, "/info").json();
    assert_eq!(info["cloudregisterurl"], entry.as_str());
    assert_eq!(info["api_origin"], origin);

    // A thermostat registers there and holds a subscribe through the port mapping.
    let (mut thermostat, events) = thermostat(&origin, SERIAL);
    thermostat.boot().unwrap();
    let registered = expect_event(&events, "registration", |e| {
        matches!(e, hearth::simulator::Event::Registered { .. })
    });
    let hearth::simulator::Event::Registered { transport } = registered else {
        unreachable!()
    };
    assert!(transport.starts_with(&origin), "{transport}");
    let _held = thermostat.open_subscribe().unwrap();

    // Home Assistant learns of it by MQTT discovery, on the Supervisor's broker.
    let climate = format!("homeassistant/climate/nest_{SERIAL}/thermostat/config");
    let found = watcher.wait("the thermostat's discovery message", |m| {
        m.contains_key(&climate)
    });
    let discovery: Value = serde_json::from_str(&found[&climate]).unwrap();
    assert!(discovery["unique_id"].is_string(), "{discovery}");

    // The sidebar: the dashboard under its ingress prefix, the thermostat's status and a
    // command from the page, with no API key, because the requests come from the ingress
    // proxy. The Supervisor passes on the browser's headers, Host and Origin included (Home
    // Assistant's own name, here a public one), with what Home Assistant and it add.
    let control = format!("{CONTAINER}:{control_port}").parse().unwrap();
    let page = ingress(control, "GET", "/", None, "");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains(&format!("<body data-ingress-path=\"{INGRESS_PATH}\">")));
    let part = ingress(control, "GET", "/ui/cards.js", None, "");
    assert!(part.starts_with("HTTP/1.1 200"), "{part}");
    let status = ingress(
        control,
        "GET",
        &format!("/status?serial={SERIAL}"),
        None,
        "",
    );
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert!(
        status.contains(&format!("\"serial\":\"{SERIAL}\"")),
        "{status}"
    );
    let set = json!({"serial": SERIAL, "command": "set_temperature", "value": 20.5}).to_string();
    let answer = ingress(control, "POST", "/command", Some(HA_ORIGIN), &set);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // A page of another site gets nothing through Home Assistant either.
    let refused = ingress(
        control,
        "POST",
        "/command",
        Some("https://evil.example"),
        &set,
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");

    // The log says where thermostats register, and never the container's port.
    let text = std::fs::read_to_string(&log).unwrap();
    for line in [
        format!("settings from {}", data.join("options.json").display()),
        format!("address from the Supervisor: {origin}"),
        format!("MQTT: the Supervisor's broker 127.0.0.1:{}", broker.port),
        format!("thermostats register at {entry}"),
    ] {
        assert!(text.contains(&line), "{line:?} not in the log:\n{text}");
    }
    assert!(!text.contains(&format!(":{device_port}/entry")), "{text}");
    assert!(
        !text.contains("the control port has host port"),
        "no warning: the control port has no host port"
    );

    // Home Assistant stops an add-on with SIGTERM.
    run(
        "kill",
        Command::new("kill").args(["-TERM", &server.0.id().to_string()]),
    );
    let exit = server.0.wait().unwrap();
    assert!(exit.success(), "{exit:?}");
    assert_eq!(checked("stopped"), Some(1));
    // The Supervisor was asked with the add-on's token (the fake refuses anything else).
    assert_eq!(
        supervisor.asked(),
        ["/addons/self/info", "/network/info", "/services/mqtt"]
    );
}
