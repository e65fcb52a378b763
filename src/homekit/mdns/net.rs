//! The responder's socket and the interfaces it answers on.
//!
//! One UDP socket on `0.0.0.0:5353`, shared with any other responder on the machine (Avahi)
//! through `SO_REUSEADDR` and `SO_REUSEPORT`, a member of `224.0.0.251` on each interface
//! hearth answers on. `IP_PKTINFO` says which interface each packet came in on and whether it
//! was sent to the group or to this host (`socket-pktinfo`, the one place that reads control
//! messages, so hearth needs no `unsafe` of its own); the rest is `rustix` and `std` over the
//! same socket. IPv4 only: HomeKit controllers find and reach an accessory over IPv4 alone.
//!
//! The interfaces are read with `getifaddrs` (`if-addrs`; glibc asks the kernel over routing
//! netlink) and `/sys/class/net/<name>/flags`: up and running, multicast-capable, neither the
//! loopback nor point-to-point, with an IPv4 address.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use rustix::net::SendFlags;
use rustix::net::sockopt;
use socket_pktinfo::PktInfoUdpSocket;
use socket2::{Domain, SockAddr};

use super::responder::{Interface, Outgoing, To};

/// The multicast DNS group.
pub const GROUP: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 251);

/// The responder's socket.
pub struct Socket {
    /// Reads packets with the interface they came in on.
    receiver: PktInfoUdpSocket,
    /// The same socket, for everything else: timeouts, memberships, sending.
    socket: UdpSocket,
    /// The port it is bound to (5353), which multicast packets go to.
    port: u16,
    /// The interfaces whose group membership it holds, by index.
    joined: Vec<u32>,
}

/// A packet read: its length in the buffer and where it came from.
#[derive(Clone, Copy, Debug)]
pub struct Received {
    pub len: usize,
    pub interface: u32,
    pub source: SocketAddrV4,
    /// Sent to the group rather than to this host.
    pub multicast: bool,
}

impl Socket {
    /// The socket on `port` of every address, sharing the port with other responders,
    /// sending with a TTL of 255 (RFC 6762 §11) and hearing its own multicast (a browser on
    /// this machine hears hearth).
    pub fn open(port: u16) -> io::Result<Socket> {
        let receiver = PktInfoUdpSocket::new(Domain::IPV4)?;
        receiver.set_reuse_address(true)?;
        receiver.set_reuse_port(true)?;
        receiver.bind(&SockAddr::from(SocketAddrV4::new(
            Ipv4Addr::UNSPECIFIED,
            port,
        )))?;
        receiver.set_multicast_loop_v4(true)?;
        receiver.set_multicast_ttl_v4(255)?;
        let socket = receiver.try_clone_std()?;
        sockopt::set_ip_ttl(&socket, 255)?;
        let port = socket.local_addr()?.port();
        Ok(Socket {
            receiver,
            socket,
            port,
            joined: Vec::new(),
        })
    }

    /// A handle on the same socket, to wake a [`Socket::recv`] with a shutdown.
    pub fn waker(&self) -> io::Result<UdpSocket> {
        self.socket.try_clone()
    }

    /// Joins the group on the interfaces that are new and leaves it on those gone.
    pub fn follow(&mut self, interfaces: &[Interface]) -> io::Result<()> {
        let wanted = |index: &u32| interfaces.iter().any(|i| i.index == *index);
        for gone in self.joined.iter().filter(|i| !wanted(i)) {
            // The interface may be gone, and its membership with it.
            let _ = sockopt::set_ip_drop_membership_with_ifindex(
                &self.socket,
                &GROUP,
                &Ipv4Addr::UNSPECIFIED,
                *gone,
            );
        }
        self.joined.retain(wanted);
        let mut failed = Ok(());
        for interface in interfaces {
            if self.joined.contains(&interface.index) {
                continue;
            }
            match sockopt::set_ip_add_membership_with_ifindex(
                &self.socket,
                &GROUP,
                &Ipv4Addr::UNSPECIFIED,
                interface.index,
            ) {
                Ok(()) | Err(rustix::io::Errno::ADDRINUSE) => self.joined.push(interface.index),
                Err(e) => failed = Err(io::Error::from(e)),
            }
        }
        failed
    }

    /// Waits at most `timeout` for a packet; `None` when none came.
    pub fn recv(&self, buf: &mut [u8], timeout: Duration) -> io::Result<Option<Received>> {
        self.socket
            .set_read_timeout(Some(timeout.max(Duration::from_millis(1))))?;
        match self.receiver.recv(buf) {
            Ok((len, info)) => match info.addr_src {
                SocketAddr::V4(source) => Ok(Some(Received {
                    len,
                    interface: u32::try_from(info.if_index).unwrap_or(0),
                    source,
                    multicast: info.addr_dst.is_multicast(),
                })),
                SocketAddr::V6(_) => Ok(None),
            },
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Sends `out` without waiting: to the group out of its interface, or to its querier.
    pub fn send(&self, out: &Outgoing) -> io::Result<()> {
        let to = match out.to {
            To::Multicast(index) => {
                sockopt::set_ip_multicast_if_with_ifindex(
                    &self.socket,
                    &GROUP,
                    &Ipv4Addr::UNSPECIFIED,
                    index,
                )?;
                SocketAddrV4::new(GROUP, self.port)
            }
            To::Unicast(to) => to,
        };
        rustix::net::sendto(&self.socket, &out.packet, SendFlags::DONTWAIT, &to)?;
        Ok(())
    }
}

/// The interfaces to answer on, each with its IPv4 addresses.
pub fn interfaces() -> io::Result<Vec<Interface>> {
    let mut found: Vec<(Interface, String)> = Vec::new();
    for candidate in if_addrs::get_if_addrs()? {
        let if_addrs::IfAddr::V4(v4) = &candidate.addr else {
            continue;
        };
        let Some(index) = candidate.index else {
            continue;
        };
        if !candidate.is_oper_up() || candidate.is_loopback() || candidate.is_p2p() {
            continue;
        }
        let address = (v4.ip, v4.prefixlen);
        match found.iter_mut().find(|(i, _)| i.index == index) {
            Some((interface, _)) => interface.addresses.push(address),
            None => found.push((
                Interface {
                    index,
                    addresses: vec![address],
                },
                candidate.name.clone(),
            )),
        }
    }
    Ok(found
        .into_iter()
        .filter(|(_, name)| multicast_capable(name))
        .map(|(interface, _)| interface)
        .collect())
}

/// Whether the interface has `IFF_MULTICAST`, as sysfs says (yes where it cannot be read).
fn multicast_capable(name: &str) -> bool {
    const IFF_MULTICAST: u32 = 0x1000;
    if name.contains('/') || name.starts_with('.') {
        return false;
    }
    std::fs::read_to_string(format!("/sys/class/net/{name}/flags"))
        .ok()
        .and_then(|flags| u32::from_str_radix(flags.trim().trim_start_matches("0x"), 16).ok())
        .is_none_or(|flags| flags & IFF_MULTICAST != 0)
}
