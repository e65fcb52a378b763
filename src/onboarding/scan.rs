//! Finding thermostats: every address of a subnet (at most a /24) is asked for its settings
//! API's `cloudregisterurl`, [`PARALLEL`] at a time, each with the client's short timeouts. A
//! host counts if it answers 200 with a JSON object holding that URL. A /24 with nothing on it
//! takes about 254 / 32 × 1 s ≈ 8 s (connection attempts to absent hosts time out after 1 s);
//! hosts that accept a connection and never answer are each given up to 4 s, so a /24 full of
//! them could take about 32 s.

use std::fmt;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use parking_lot::Mutex;

use super::thermostat_api;
use crate::app::PublicOrigin;

/// Addresses probed at once.
pub const PARALLEL: usize = 32;

/// An IPv4 subnet of 1 to 256 addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet {
    network: Ipv4Addr,
    prefix: u8,
}

impl Subnet {
    /// `192.168.1.0/24` (host bits are dropped: `192.168.1.7/24` is the same subnet).
    pub fn parse(raw: &str) -> Result<Subnet, String> {
        let shape = || format!("{raw:?} is not a subnet like 192.168.1.0/24");
        let (ip, prefix) = raw.trim().split_once('/').ok_or_else(shape)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| shape())?;
        let prefix: u8 = prefix.parse().map_err(|_| shape())?;
        if !(24..=32).contains(&prefix) {
            return Err(format!(
                "{raw:?} is too large: a scan covers at most a /24 (256 addresses)"
            ));
        }
        Ok(Subnet::new(ip, prefix))
    }

    /// The /24 an address is in.
    pub fn of(ip: Ipv4Addr) -> Subnet {
        Subnet::new(ip, 24)
    }

    /// The /24 of this server's address, if it is an IPv4 address (the default for a scan).
    pub fn around(origin: &PublicOrigin) -> Option<Subnet> {
        origin.ip.parse().ok().map(Subnet::of)
    }

    fn new(ip: Ipv4Addr, prefix: u8) -> Subnet {
        let mask = u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0);
        Subnet {
            network: Ipv4Addr::from(u32::from(ip) & mask),
            prefix,
        }
    }

    /// The addresses a host can have: without the network and broadcast addresses, except in
    /// a /31 or /32, which have none.
    pub fn hosts(&self) -> Vec<Ipv4Addr> {
        // In u64: the last /24 (255.255.255.0) ends past u32::MAX.
        let first = u64::from(u32::from(self.network));
        let size = 1u64 << (32 - u32::from(self.prefix));
        let all = (first..first + size).filter_map(|n| u32::try_from(n).ok().map(Ipv4Addr::from));
        if size <= 2 {
            all.collect()
        } else {
            all.skip(1).take((size - 2) as usize).collect()
        }
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// A thermostat that answered.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub ip: Ipv4Addr,
    pub cloudregisterurl: String,
}

/// Every thermostat in `subnet` whose settings API answers on `port`, by address.
pub fn scan(subnet: &Subnet, port: u16) -> Vec<Found> {
    let hosts = subnet.hosts();
    let next = AtomicUsize::new(0);
    let found = Mutex::new(Vec::new());
    let probe = || {
        while let Some(&ip) = hosts.get(next.fetch_add(1, Ordering::Relaxed)) {
            if let Ok(url) = thermostat_api::read_url(ip, port) {
                found.lock().push(Found {
                    ip,
                    cloudregisterurl: url,
                });
            }
        }
    };
    thread::scope(|scope| {
        let mut started = 0;
        for i in 0..PARALLEL.min(hosts.len()) {
            let spawned = thread::Builder::new()
                .name(format!("scan-{i}"))
                .stack_size(256 * 1024)
                .spawn_scoped(scope, probe);
            match spawned {
                Ok(_) => started += 1,
                Err(e) => log::warn!("could not start a scanning thread: {e}"),
            }
        }
        if started == 0 {
            probe();
        }
    });
    let mut found = found.into_inner();
    found.sort_by_key(|f| f.ip);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets() {
        let s = Subnet::parse("192.168.1.77/24").unwrap();
        assert_eq!(s.to_string(), "192.168.1.0/24");
        let hosts = s.hosts();
        assert_eq!(hosts.len(), 254);
        assert_eq!(hosts[0], Ipv4Addr::new(192, 168, 1, 1));
        assert_eq!(hosts[253], Ipv4Addr::new(192, 168, 1, 254));
        assert_eq!(Subnet::parse("10.0.0.5/32").unwrap().hosts().len(), 1);
        let last = Subnet::parse("255.255.255.0/24").unwrap().hosts();
        assert_eq!(last.last(), Some(&Ipv4Addr::new(255, 255, 255, 254)));
        assert_eq!(Subnet::parse("10.0.0.4/30").unwrap().hosts().len(), 2);
        assert_eq!(
            Subnet::of(Ipv4Addr::new(10, 1, 2, 3)).to_string(),
            "10.1.2.0/24"
        );
        for bad in [
            "10.0.0.0/16",
            "10.0.0.0",
            "nope/24",
            "10.0.0.0/33",
            "::1/128",
        ] {
            assert!(Subnet::parse(bad).is_err(), "{bad}");
        }
    }
}
