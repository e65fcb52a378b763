//! `hearth healthcheck`, the image's `HEALTHCHECK`: exit 0 while the control port answers
//! `/health`, 1 (with the reason on stdout, which Docker keeps in the container's health log)
//! whenever it does not.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output};

use crate::common::*;

/// `hearth healthcheck` with a clean environment but for `env`.
fn healthcheck(env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("healthcheck")
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn says(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A port on 127.0.0.1 that nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_serving_hearth_is_healthy() {
    let server = TestServer::start();
    let port = server.control().port().to_string();
    // As the image runs it: the settings from the environment (and the options file, here
    // none), the control port bound on every address and asked on loopback.
    let out = healthcheck(&[("CONTROL_PORT", &port), ("CONTROL_HOST", "0.0.0.0")], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", says(&out));
    assert!(
        says(&out).starts_with(&format!(
            "healthy: the control port 0.0.0.0:{port} answered /health with 200"
        )),
        "{}",
        says(&out)
    );
    // The options win over the environment, as for serve.
    let out = healthcheck(
        &[("CONTROL_PORT", "1"), ("CONTROL_HOST", "127.0.0.1")],
        &["--control-port", &port],
    );
    assert_eq!(out.status.code(), Some(0), "{}", says(&out));

    // Stopped, the same check fails.
    let _dir = server.stop();
    let out = healthcheck(
        &[("CONTROL_PORT", &port), ("CONTROL_HOST", "127.0.0.1")],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(
        says(&out).starts_with(&format!(
            "unhealthy: no answer from the control port 127.0.0.1:{port}: "
        )),
        "{}",
        says(&out)
    );
}

/// With `CERT_DIR` the control port speaks HTTPS only: the check asks over TLS, trusting the
/// server's own certificate, as the watchdog does; asked over plain HTTP it would fail.
#[test]
fn a_hearth_serving_https_is_healthy() {
    let certs = TempDir::new("healthcheck-certs");
    crate::common::tls::make_certificates(certs.path(), crate::common::tls::KeyKind::Sec1Ec);
    let dir = certs.path().to_path_buf();
    let server = TestServer::start_with(move |c| c.cert_dir = Some(dir));
    let port = server.control().port().to_string();
    let cert_dir = certs.path().to_str().unwrap();
    let plain = [
        ("CONTROL_PORT", port.as_str()),
        ("CONTROL_HOST", "127.0.0.1"),
    ];
    // Without CERT_DIR the question is plain HTTP, which this port does not answer.
    let out = healthcheck(&plain, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    let out = healthcheck(&[plain[0], plain[1], ("CERT_DIR", cert_dir)], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", says(&out));
    assert!(
        says(&out).starts_with(&format!(
            "healthy: the control port 127.0.0.1:{port} answered /health with 200"
        )),
        "{}",
        says(&out)
    );
    // A certificate directory that holds none: unhealthy, saying why.
    let empty = TempDir::new("healthcheck-empty");
    let out = healthcheck(
        &[
            plain[0],
            plain[1],
            ("CERT_DIR", empty.path().to_str().unwrap()),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(says(&out).starts_with("unhealthy: "), "{}", says(&out));
}

#[test]
fn nothing_listening_is_unhealthy() {
    let port = closed_port().to_string();
    let out = healthcheck(
        &[("CONTROL_PORT", &port), ("CONTROL_HOST", "127.0.0.1")],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(
        says(&out).starts_with("unhealthy: no answer"),
        "{}",
        says(&out)
    );
}

/// Something on the port that is not a healthy hearth: an error status, or no answer at all
/// (the check gives up after its own timeout rather than hanging until Docker's).
#[test]
fn an_error_or_a_silent_listener_is_unhealthy() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let server = std::thread::spawn(move || {
        let (mut first, _) = listener.accept().unwrap();
        let mut request = [0u8; 1024];
        let _ = first.read(&mut request).unwrap();
        first
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .unwrap();
        drop(first);
        // The second is accepted and never answered; it is held until the check gave up.
        let (silent, _) = listener.accept().unwrap();
        silent
    });
    let env = [
        ("CONTROL_PORT", port.as_str()),
        ("CONTROL_HOST", "127.0.0.1"),
    ];
    let out = healthcheck(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(
        says(&out).contains("answered /health with 500"),
        "{}",
        says(&out)
    );
    let out = healthcheck(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(
        says(&out).starts_with("unhealthy: no answer"),
        "{}",
        says(&out)
    );
    drop(server.join().unwrap());
}

#[test]
fn a_bad_setting_is_unhealthy_and_named() {
    let out = healthcheck(&[("CONTROL_PORT", "eighty")], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", says(&out));
    assert!(
        says(&out).starts_with("unhealthy: ") && says(&out).contains("CONTROL_PORT"),
        "{}",
        says(&out)
    );
}
