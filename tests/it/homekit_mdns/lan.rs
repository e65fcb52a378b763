//! A network of the test's own, for the responder on the real port 5353.
//!
//! The test binary runs the test again inside new user, network and mount namespaces
//! (`unshare -rnm`): there it is root, port 5353 is free, and nothing reaches the machine's own
//! network. It mounts a sysfs of that network namespace, makes a second network namespace for
//! the peer (the other machines on the network: a `sleep` started by `unshare -n`), and joins
//! the two with veth pairs: link `i` is hearth's `h<i>` at 10.9.<i>.1/24 and the peer's
//! `q<i>` at 10.9.<i>.2/24. The peer's sockets are made on a thread that entered the peer's
//! namespace (`setns`), so they stay there whichever thread uses them; programs run there
//! through `nsenter`.
//!
//! Where namespaces cannot be made (no `unshare`, user namespaces off), the test says so and
//! passes, unless `HEARTH_REQUIRE_MDNS=1`.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};

use crate::common::wait_until;

/// Set in the test binary run inside the namespaces: the test that is to run there.
const INSIDE: &str = "HEARTH_MDNS_NETNS";

/// The network, inside the namespaces.
pub struct Lan {
    peer: Child,
    /// The peer's network namespace.
    ns: File,
}

/// Runs the test `path` (its path in the test binary, `homekit_mdns::...`) in namespaces of its
/// own with `links` links: outside, it runs the test binary again there, fails with its output
/// if it failed, and returns `None` (the test is done); inside, it returns the network.
pub fn isolated(path: &str, links: u8) -> Option<Lan> {
    if std::env::var(INSIDE).as_deref() == Ok(path) {
        return Some(Lan::make(links));
    }
    let probe = Command::new("unshare")
        .args([
            "-rnm", "ip", "link", "add", "t0", "type", "veth", "peer", "name", "t1",
        ])
        .output();
    if let Err(why) = probe
        .map_err(|e| e.to_string())
        .and_then(|o| match o.status.success() {
            true => Ok(()),
            false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
        })
    {
        let message = format!("cannot make network namespaces here (unshare -rnm, ip): {why}");
        assert!(
            std::env::var("HEARTH_REQUIRE_MDNS").as_deref() != Ok("1"),
            "{message} (HEARTH_REQUIRE_MDNS=1)"
        );
        eprintln!("skipping {path}: {message}");
        return None;
    }
    let out = Command::new("unshare")
        .arg("-rnm")
        .arg(std::env::current_exe().unwrap())
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, path)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "{path}, in its own network namespaces, failed:\n{text}"
    );
    assert!(text.contains("1 passed"), "{path} did not run:\n{text}");
    None
}

/// Runs a program, failing with its output if it fails.
fn run(command: &mut Command) {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ip(args: &[&str]) {
    run(Command::new("ip").args(args));
}

impl Lan {
    fn make(links: u8) -> Lan {
        run(Command::new("mount").args(["-t", "sysfs", "sysfs", "/sys"]));
        ip(&["link", "set", "lo", "up"]);
        let mut peer = Command::new("unshare")
            .args(["-n", "sh", "-c", "echo ready; exec sleep 600"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(peer.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let ns = File::open(format!("/proc/{}/ns/net", peer.id())).unwrap();
        let lan = Lan { peer, ns };
        lan.in_peer_run(&["ip", "link", "set", "lo", "up"]);
        for i in 0..links {
            lan.add_link(i);
        }
        lan
    }

    /// Adds link `i` (as a new interface appears on a machine), up on both sides.
    pub fn add_link(&self, i: u8) {
        let (h, q) = (format!("h{i}"), format!("q{i}"));
        let pid = self.peer.id().to_string();
        ip(&[
            "link", "add", &h, "type", "veth", "peer", "name", &q, "netns", &pid,
        ]);
        ip(&["addr", "add", &format!("{}/24", Lan::hearth(i)), "dev", &h]);
        ip(&["link", "set", &h, "up"]);
        let peer = Lan::peer(i).to_string();
        self.in_peer_run(&["ip", "addr", "add", &format!("{peer}/24"), "dev", &q]);
        self.in_peer_run(&["ip", "link", "set", &q, "up"]);
        // A veth is up once both its ends are.
        wait_until(&format!("{h} up"), || {
            std::fs::read_to_string(format!("/sys/class/net/{h}/operstate"))
                .is_ok_and(|s| s.trim() == "up")
        });
    }

    /// Replaces hearth's address on link `i` by `to` (as a DHCP lease that changed).
    pub fn readdress(&self, i: u8, to: Ipv4Addr) {
        let h = format!("h{i}");
        ip(&["addr", "flush", "dev", &h]);
        ip(&["addr", "add", &format!("{to}/24"), "dev", &h]);
    }

    /// Hearth's address on link `i`.
    pub fn hearth(i: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 9, i, 1)
    }

    /// The peer's address on link `i`.
    pub fn peer(i: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 9, i, 2)
    }

    /// Runs `f` on a thread in the peer's network namespace: the sockets it makes (and the
    /// threads it starts) are the peer's.
    pub fn in_peer<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|s| {
            s.spawn(|| {
                rustix::thread::move_into_link_name_space(
                    self.ns.as_fd(),
                    Some(rustix::thread::LinkNameSpaceType::Network),
                )
                .unwrap();
                f()
            })
            .join()
            .unwrap()
        })
    }

    /// A program to run in the peer's network namespace.
    pub fn in_peer_command(&self, program: &str) -> Command {
        let mut command = Command::new("nsenter");
        command
            .args(["-t", &self.peer.id().to_string(), "-n", "--"])
            .arg(program);
        command
    }

    fn in_peer_run(&self, args: &[&str]) {
        let mut command = self.in_peer_command(args[0]);
        run(command.args(&args[1..]));
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        let _ = self.peer.kill();
        let _ = self.peer.wait();
    }
}
