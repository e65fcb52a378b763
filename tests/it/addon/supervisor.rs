//! What hearth asks the Supervisor at start-up (`hearth::supervisor::complete`), against the
//! fake one: the origin and broker it fills in, what it leaves alone, and the refusals that
//! stop it.

use hearth::Config;
use hearth::app::PublicOrigin;
use hearth::config::{ApiOrigin, MqttConfig};
use serde_json::json;

use super::fake_supervisor::*;

/// An add-on's configuration (ports 8000 and 8082 in the container) with the Supervisor at
/// `supervisor`, changed by `adjust`.
fn config(supervisor: &FakeSupervisor, adjust: impl FnOnce(&mut Config)) -> Config {
    let mut c = Config::local("/nonexistent");
    c.device_port = 8000;
    c.control_port = 8082;
    c.supervisor = Some(supervisor.config());
    adjust(&mut c);
    c
}

fn home_assistant(ports: serde_json::Value, mqtt: Answer) -> FakeSupervisor {
    FakeSupervisor::start(&[
        ("/network/info", network_info("192.168.1.10")),
        ("/addons/self/info", addon_info(ports)),
        ("/services/mqtt", mqtt),
    ])
}

#[test]
fn the_origin_and_the_broker_come_from_the_supervisor() {
    let s = home_assistant(
        json!({"8000/tcp": 9543, "8082/tcp": null}),
        mqtt_service("core-mosquitto", 1883, "addons", "Ohg5ee"),
    );
    let mut c = config(&s, |c| c.mqtt_names.topic_prefix = "home/nest".into());
    hearth::supervisor::complete(&mut c).unwrap();
    let origin = PublicOrigin::resolve(c.api_origin.as_ref(), c.device_port, false);
    assert_eq!(
        origin.cloud_register_url(),
        "http://192.168.1.10:9543/entry"
    );
    let mqtt = c.mqtt.unwrap();
    assert_eq!((mqtt.host.as_str(), mqtt.port), ("core-mosquitto", 1883));
    assert_eq!(
        (mqtt.user.as_deref(), mqtt.password.as_deref()),
        (Some("addons"), Some("Ohg5ee"))
    );
    // The options' names go with the Supervisor's broker.
    assert_eq!(mqtt.topic_prefix, "home/nest");
    assert_eq!(mqtt.discovery_prefix, "homeassistant");
    assert_eq!(
        s.asked(),
        ["/addons/self/info", "/network/info", "/services/mqtt"]
    );
}

#[test]
fn the_device_ports_host_port_is_the_one_the_user_chose() {
    for (network, port) in [
        (json!({"8000/tcp": 19543, "8082/tcp": null}), 19543),
        // Unmapped (thermostats cannot reach it; the log says so): the manifest's port.
        (json!({"8000/tcp": null, "8082/tcp": null}), 9543),
        (json!(null), 9543),
    ] {
        let s = home_assistant(network.clone(), no_mqtt_service());
        let mut c = config(&s, |_| {});
        hearth::supervisor::complete(&mut c).unwrap();
        assert_eq!(
            c.api_origin.unwrap().raw(),
            format!("http://192.168.1.10:{port}"),
            "{network}"
        );
        assert_eq!(c.mqtt, None);
    }
}

#[test]
fn what_the_options_set_is_not_asked_for() {
    let s = home_assistant(
        json!({"8000/tcp": 9543}),
        mqtt_service("core-mosquitto", 1883, "addons", "pw"),
    );
    let origin = ApiOrigin::parse("http://nest-server.lan:9543").unwrap();
    let broker = MqttConfig::new("broker.lan", 1884);
    let mut c = config(&s, |c| {
        c.api_origin = Some(origin.clone());
        c.mqtt = Some(broker.clone());
    });
    hearth::supervisor::complete(&mut c).unwrap();
    assert_eq!(c.api_origin, Some(origin));
    assert_eq!(c.mqtt, Some(broker));
    assert_eq!(s.asked(), ["/addons/self/info"]);
}

#[test]
fn without_a_broker_to_offer_hearth_runs_without_mqtt() {
    let tls = ok(json!({"host": "core-mosquitto", "port": 8883, "ssl": true,
                        "protocol": "3.1.1", "username": "a", "password": "b"}));
    for mqtt in [
        no_mqtt_service(),
        // A manifest without `mqtt:want` is refused the service.
        error(403, "No access to mqtt service!"),
        // A Supervisor not ready to answer (logged as an error, not as "no broker").
        error(400, "System is not ready with state: setup"),
        // A broker hearth cannot speak to.
        tls,
        ok(json!({"port": 1883})),
    ] {
        let s = home_assistant(json!({"8000/tcp": 9543}), mqtt.clone());
        let mut c = config(&s, |_| {});
        hearth::supervisor::complete(&mut c).unwrap();
        assert_eq!(c.mqtt, None, "{mqtt:?}");
        assert!(c.api_origin.is_some());
    }
}

/// Without the host's address hearth would hand thermostats a wrong one: it stops, and says
/// which option to set.
#[test]
fn no_address_from_the_supervisor_stops_start_up() {
    let refused = FakeSupervisor::start(&[
        ("/network/info", error(403, "Forbidden")),
        ("/addons/self/info", addon_info(json!({"8000/tcp": 9543}))),
    ]);
    let no_ipv4 = FakeSupervisor::start(&[
        ("/network/info", ok(json!({"interfaces": []}))),
        ("/addons/self/info", addon_info(json!({"8000/tcp": 9543}))),
    ]);
    let no_self = FakeSupervisor::start(&[("/network/info", network_info("192.168.1.10"))]);
    let cases = [
        (config(&refused, |_| {}), "403 Forbidden"),
        (
            config(&no_ipv4, |_| {}),
            "no connected interface with an IPv4 address",
        ),
        (config(&no_self, |_| {}), "404 not found"),
        (
            config(&refused, |c| {
                c.supervisor.as_mut().unwrap().token = "stale".into();
            }),
            "401 401: Unauthorized",
        ),
        (
            config(&refused, |c| {
                // Nothing listens on port 9 of loopback.
                c.supervisor.as_mut().unwrap().url = "http://127.0.0.1:9".into();
            }),
            "unreachable",
        ),
    ];
    for (mut c, why) in cases {
        let e = hearth::supervisor::complete(&mut c).unwrap_err();
        assert!(e.contains(why), "{e}");
        assert!(
            e.contains("set the option \"Address thermostats use\" (api_origin)"),
            "{e}"
        );
        assert_eq!(c.api_origin, None);
    }
}

#[test]
fn without_a_supervisor_nothing_is_asked() {
    let s = home_assistant(json!({"8000/tcp": 9543}), no_mqtt_service());
    let mut c = config(&s, |c| c.supervisor = None);
    hearth::supervisor::complete(&mut c).unwrap();
    assert_eq!((c.api_origin, c.mqtt), (None, None));
    assert!(s.asked().is_empty());
}

/// A Supervisor that answers `302` is not followed to where it points (a server on another
/// loopback address that would answer everything): start-up stops, naming the answer, and
/// the other server is asked nothing.
#[test]
fn a_redirect_from_the_supervisor_is_not_followed() {
    let elsewhere = home_assistant(json!({"8000/tcp": 9543}), no_mqtt_service());
    let redirecting = crate::common::redirect::Upstream::redirecting(
        "127.0.0.2:0".parse().unwrap(),
        elsewhere.url.clone(),
        r#"{"result": "ok", "data": {}}"#,
    );
    let mut c = config(&elsewhere, |c| {
        c.supervisor.as_mut().unwrap().url = redirecting.url();
    });
    let e = hearth::supervisor::complete(&mut c).unwrap_err();
    assert!(e.contains("302"), "{e}");
    assert_eq!(c.api_origin, None);
    assert!(redirecting.asked() >= 1);
    assert_eq!(elsewhere.asked(), Vec::<String>::new());
}
