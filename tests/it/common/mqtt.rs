//! A real MQTT broker for tests (Debian's `mosquitto` on 127.0.0.1 and a free port; `.ci/run`
//! installs it) and a test client that records every message.

use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use symqtt::v3::{Client, ConnectOptions, InboundHandler, Publish, PublishMessage, QoS, Session};
use symqtt_transport::tcp::TcpTransport;

use super::{TIMEOUT, TempDir, wait_until};

/// A mosquitto broker, killed when dropped. No persistence: a restart forgets everything
/// retained, as a broker restarted without a database does.
pub struct Broker {
    child: Child,
    pub port: u16,
    dir: Option<TempDir>,
}

impl Broker {
    pub fn start() -> Broker {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Broker::on(port)
    }

    pub fn on(port: u16) -> Broker {
        Broker::with(port, TempDir::new("mosquitto"), false)
    }

    /// A broker that keeps what is retained in `dir` across a [`Broker::terminate`].
    pub fn with(port: u16, dir: TempDir, persistent: bool) -> Broker {
        let persistence = if persistent {
            // Run as root (as in CI), mosquitto would otherwise become the `mosquitto` user,
            // which cannot write to the test's directory; as anyone else `user` is ignored.
            format!(
                "persistence true\npersistence_location {}/\nuser root\n",
                dir.path().display()
            )
        } else {
            "persistence false\n".to_string()
        };
        Broker::launch(port, dir, &format!("allow_anonymous true\n{persistence}"))
    }

    /// A broker on a free port that lets in only `user` with `password`.
    pub fn with_user(user: &str, password: &str) -> Broker {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = TempDir::new("mosquitto-users");
        let passwords = dir.path().join("passwords");
        let made = Command::new("mosquitto_passwd")
            .args(["-b", "-c"])
            .arg(&passwords)
            .args([user, password])
            .status()
            .unwrap();
        assert!(made.success(), "mosquitto_passwd failed");
        // `user root`: see `with`; the password file is in the test's directory.
        let conf = format!(
            "allow_anonymous false\npassword_file {}\npersistence false\nuser root\n",
            passwords.display()
        );
        Broker::launch(port, dir, &conf)
    }

    fn launch(port: u16, dir: TempDir, conf_lines: &str) -> Broker {
        let conf = dir.path().join("mosquitto.conf");
        std::fs::write(&conf, format!("listener {port} 127.0.0.1\n{conf_lines}")).unwrap();
        let exe = ["/usr/sbin/mosquitto", "/usr/bin/mosquitto"]
            .into_iter()
            .map(PathBuf::from)
            .find(|p| p.exists())
            .expect("mosquitto is not installed (apt-get install mosquitto; .ci/run does)");
        let child = Command::new(exe)
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until(&format!("mosquitto listening on {port}"), || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Broker {
            child,
            port,
            dir: Some(dir),
        }
    }

    /// Stops the broker the way a service manager does (SIGTERM: it saves what it retains)
    /// and gives back its directory.
    pub fn terminate(mut self) -> TempDir {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let _ = self.child.wait();
        self.dir.take().unwrap()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub type Log = Arc<Mutex<Vec<(String, String)>>>;

pub struct Recorder(Log);

impl InboundHandler for Recorder {
    fn on_publish(&self, msg: &Publish) {
        let payload = String::from_utf8_lossy(&msg.payload).to_string();
        self.0.lock().unwrap().push((msg.topic.clone(), payload));
    }
}

/// A test client subscribed to everything, keeping every message in order.
pub struct Watcher {
    client: Client<Recorder, TcpTransport>,
    log: Log,
}

impl Watcher {
    pub fn connect(port: u16) -> Watcher {
        Watcher::connect_as(port, None)
    }

    /// A watcher that signs in with a user name and password.
    pub fn connect_as(port: u16, credentials: Option<(&str, &str)>) -> Watcher {
        let log: Log = Arc::default();
        let mut connected = None;
        wait_until("a watcher's connection to the broker", || {
            let attempt = TcpTransport::builder(("127.0.0.1", port))
                .connect()
                .map_err(|e| e.to_string())
                .and_then(|t| {
                    let options = ConnectOptions {
                        client_id: format!("watcher-{}", std::process::id()),
                        clean_session: true,
                        keep_alive: Duration::from_secs(30),
                        will: None,
                        username: credentials.map(|(u, _)| u.to_string()),
                        password: credentials.map(|(_, p)| Bytes::from(p.to_string())),
                        connect_timeout: Some(TIMEOUT),
                        ping_timeout: None,
                    };
                    Client::connect(options, Recorder(Arc::clone(&log)), Session::new(), t)
                        .map_err(|e| e.to_string())
                });
            match attempt {
                Ok(c) => connected = Some(c),
                Err(e) => eprintln!("watcher not connected yet: {e}"),
            }
            connected.is_some()
        });
        let client = connected.unwrap();
        client
            .subscribe(&[("#", QoS::AtLeastOnce)], Some(TIMEOUT))
            .unwrap()
            .wait_timeout(TIMEOUT)
            .unwrap();
        Watcher { client, log }
    }

    /// The latest payload of each topic.
    pub fn latest(&self) -> HashMap<String, String> {
        self.log.lock().unwrap().iter().cloned().collect()
    }

    pub fn count(&self, topic: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|(t, _)| t == topic)
            .count()
    }

    /// Waits until the latest payloads satisfy `pred`.
    pub fn wait(
        &self,
        what: &str,
        pred: impl Fn(&HashMap<String, String>) -> bool,
    ) -> HashMap<String, String> {
        let mut latest = HashMap::new();
        wait_until(what, || {
            latest = self.latest();
            pred(&latest)
        });
        latest
    }

    pub fn wait_for(&self, topic: &str, payload: &str) {
        self.wait(&format!("{topic} = {payload:?}"), |m| {
            m.get(topic).map(String::as_str) == Some(payload)
        });
    }

    pub fn publish(&self, topic: &str, payload: &str) {
        let message =
            PublishMessage::new(topic, Bytes::from(payload.to_string())).qos(QoS::AtLeastOnce);
        self.client
            .publish(&message)
            .unwrap()
            .unwrap()
            .wait_timeout(TIMEOUT)
            .unwrap();
    }
}
