//! What a web page may do with hearth's ports: the one rule both ports apply before routing
//! (SECURITY.md, "What a web page can and cannot do").
//!
//! Clients that are not browsers (curl, Homebridge, the Home Assistant integrations,
//! Matterbridge, thermostats) send no `Origin` and no `Sec-Fetch-Site: cross-site`, and use a
//! name of this server or its address: they pass unchanged, whatever their `Content-Type`.
//!
//! - **Host** (DNS rebinding): a page whose name an attacker points at a LAN address speaks to
//!   hearth as its own origin, so the `Origin` check alone cannot see it; its requests still
//!   carry the attacker's name in `Host`. A `Host` must be an IP literal, `localhost`, a name
//!   without a dot, a name ending `.local`, `.lan`, `.home.arpa` or `.internal` (names no
//!   public DNS gives out), one of this box's own names (its host name, and that name under
//!   each domain of resolv.conf's search list, as a FritzBox or a Livebox names it:
//!   `raspberrypi.fritz.box`; [`crate::config::BoxNames`], read when the server starts and
//!   given to this rule as a list), API_ORIGIN's host or a name in `ALLOWED_HOSTS`; else 421.
//!   A search domain admits the box's one name under it, not the domain: with `search
//!   example.com`, a box named `pi` admits `pi.example.com` and no other name under it. No
//!   `Host` (HTTP/1.0) passes. Home Assistant's ingress proxy (`INGRESS_PROXY`) passes whatever
//!   it sends: it forwards the browser's `Host` (Home Assistant's own name, which may be a
//!   public one such as Nabu Casa's), and only signed-in people reach hearth through it. A
//!   refused `Host` is logged once a minute per name ([`RefusalLog`]), with the
//!   `ALLOWED_HOSTS` value that would admit it.
//! - **Origin** (cross-site requests): a request whose `Origin` is neither the request's own
//!   origin nor in `ALLOWED_ORIGINS` (`null` is never either), or that carries
//!   `Sec-Fetch-Site: cross-site` without an allowed `Origin`, gets 403. "Its own origin" has
//!   `Host`'s host and port (a page on the same host and port is served by the same socket, so
//!   by hearth or the proxy in front of it). Such a refusal is logged once a minute per
//!   address ([`RefusalLog`]): a page open in a browser can send thousands a second. When
//!   `Host` has no port, it is the scheme hearth serves (`https` with `CERT_DIR`, else
//!   `http`) at that scheme's default port; the other
//!   scheme at its default port passes only for a name in `ALLOWED_HOSTS` (a reverse proxy that
//!   terminates TLS: the page is `https`, hearth sees plain HTTP) and through `INGRESS_PROXY`.
//!   Else another app on the same host at the other default port would pass as hearth.
//!   A bracketed `Host` must hold an IPv6 address without a zone id.
//! - CORS headers (the origin echoed, `Vary: Origin`) and a successful preflight only for
//!   `ALLOWED_ORIGINS`; a preflight from any other origin gets 403.
//!
//! Each port decides which rule a route needs ([`Guard`]) and words the refusal in its own
//! error shape; the rule logs it ([`Browsers::log`]). HomeKit's listener applies none of this:
//! HAP controllers send no `Host` worth checking, and it refuses any request a web page sent
//! (`homekit::http`).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use parking_lot::Mutex;

use crate::config::{ApiOrigin, Config};
use crate::http::Request;
use crate::util::clock::Clock;
use crate::util::logged;
use crate::util::refusals::{Key, RefusalLog};

/// Name endings that no public DNS name has: the home network's own names.
const LOCAL_SUFFIXES: [&str; 4] = [".local", ".lan", ".home.arpa", ".internal"];

/// What a route needs from the browser rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Guard {
    /// Nothing: `/health`, which probes call by any name.
    Open,
    /// A name of this server in `Host`: routes that change nothing and show no secret (`/info`,
    /// the dashboard page).
    Host,
    /// `Host`, and no foreign page: every route that changes something or shows a secret.
    Full,
}

/// Why a request was refused. The status and text are the same on both ports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A `Host` that names no server of this home (421).
    Host(String),
    /// An `Origin` that is not the request's own and not in `ALLOWED_ORIGINS` (403).
    Origin(String),
    /// `Sec-Fetch-Site: cross-site` without an allowed `Origin` (403).
    CrossSite,
}

impl Refusal {
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Host(_) => 421,
            Refusal::Origin(_) | Refusal::CrossSite => 403,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Refusal::Host(host) => format!(
                "Host check error: refused a request for {}, which is not a name of this \
                 server (a guard against DNS rebinding). If hearth should answer at that \
                 name, add it to ALLOWED_HOSTS",
                shown(host)
            ),
            Refusal::Origin(origin) => format!(
                "Origin check error: refused a request from the web page at {}. Web pages of \
                 other sites may not use this server; to let that page use it, add its \
                 origin to ALLOWED_ORIGINS",
                shown(origin)
            ),
            Refusal::CrossSite => "Origin check error: refused a request from a web page of \
                                   another site (Sec-Fetch-Site: cross-site). Web pages of other \
                                   sites may not use this server; to let a page use it, add \
                                   its origin to ALLOWED_ORIGINS"
                .to_string(),
        }
    }
}

/// A header value quoted for a message, cut short if long.
fn shown(value: &str) -> String {
    const LONGEST: usize = 100;
    match value.char_indices().nth(LONGEST) {
        Some((end, _)) => format!("\"{}...\"", &value[..end]),
        None => format!("\"{value}\""),
    }
}

/// What a request that passed may be answered with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Passed {
    /// The `Origin`, when it is in `ALLOWED_ORIGINS`: the answer carries CORS headers for it.
    pub cors_origin: Option<String>,
}

impl Passed {
    /// `Access-Control-Allow-Origin` with the allowed origin and `Vary: Origin`, or nothing.
    pub fn cors_headers(&self) -> Vec<(String, String)> {
        match &self.cors_origin {
            Some(origin) => vec![
                ("Access-Control-Allow-Origin".into(), origin.clone()),
                ("Vary".into(), "Origin".into()),
            ],
            None => Vec::new(),
        }
    }

    /// The headers of a successful preflight: [`Passed::cors_headers`] and what may be sent.
    pub fn preflight_headers(&self) -> Vec<(String, String)> {
        let mut headers = self.cors_headers();
        if !headers.is_empty() {
            headers.extend(
                [
                    (
                        "Access-Control-Allow-Methods",
                        "GET, POST, PUT, DELETE, OPTIONS",
                    ),
                    (
                        "Access-Control-Allow-Headers",
                        "Content-Type, Authorization, X-API-Key",
                    ),
                    ("Access-Control-Max-Age", "600"),
                ]
                .map(|(n, v)| (n.to_string(), v.to_string())),
            );
        }
        headers
    }
}

/// The browser rule with this server's settings: one, shared by both ports (`App::browsers`).
pub struct Browsers {
    /// API_ORIGIN's host (lower case, no brackets or trailing dot), `ALLOWED_HOSTS` and this
    /// box's names (`Config::box_names`).
    names: Vec<String>,
    /// `ALLOWED_HOSTS` alone (lower case, no brackets or trailing dot): the names a reverse
    /// proxy may serve with the other scheme.
    allowed_hosts: Vec<String>,
    /// Whether both ports serve HTTPS (`CERT_DIR`): every request came through the TLS front.
    tls: bool,
    allowed_origins: Vec<String>,
    ingress_proxy: Option<IpAddr>,
    /// The refused `Host` names logged lately, for [`Browsers::log`].
    refused_hosts: Mutex<RefusalLog<RefusedName>>,
    /// The addresses whose cross-site requests were logged lately: a page in a browser can
    /// send thousands a second.
    refused_pages: Mutex<RefusalLog>,
    clock: Clock,
}

impl Browsers {
    pub fn new(config: &Config) -> Browsers {
        let allowed_hosts: Vec<String> = config
            .allowed_hosts
            .iter()
            .map(|h| {
                let h = bare(h).to_ascii_lowercase();
                h.strip_suffix('.').map(str::to_string).unwrap_or(h)
            })
            .collect();
        let mut names = allowed_hosts.clone();
        if let Some(origin) = &config.api_origin {
            names.push(bare(&origin.host).to_ascii_lowercase());
        }
        if let Some(box_names) = &config.box_names {
            names.extend_from_slice(box_names.names());
        }
        Browsers {
            names,
            allowed_hosts,
            tls: config.cert_dir.is_some(),
            allowed_origins: config.allowed_origins.clone(),
            ingress_proxy: config.ingress_proxy,
            refused_hosts: Mutex::default(),
            refused_pages: Mutex::default(),
            clock: config.clock.clone(),
        }
    }

    /// Logs `refusal` of `request` for `port` ("device port", "control port"), as a warning
    /// within the refusal logs' line budget: a refused `Host` once a minute per name, with the
    /// `ALLOWED_HOSTS` value that would admit it; a refused page once a minute per address.
    pub fn log(&self, port: &str, request: &Request, refusal: &Refusal) {
        let now = self.clock.now();
        let level = (module_path!(), log::Level::Warn);
        match refusal {
            Refusal::Host(host) => {
                let lines = self
                    .refused_hosts
                    .lock()
                    .refused(RefusedName::of(host), now);
                lines.write(level, port, &HostRefused(host));
            }
            Refusal::Origin(_) | Refusal::CrossSite => {
                let from = request
                    .remote
                    .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |a| {
                        crate::util::client_key(a.ip())
                    });
                let lines = self.refused_pages.lock().refused(from, now);
                let what = PageRefused {
                    request,
                    refusal,
                    from,
                };
                lines.write(level, port, &what);
            }
        }
    }

    /// Applies `guard` to `req`. A preflight (`OPTIONS`) is checked with [`Guard::Full`] on every
    /// path, so only an allowed (or the request's own) origin gets a successful one.
    pub fn check(&self, req: &Request, guard: Guard) -> Result<Passed, Refusal> {
        let origin = req.header("Origin");
        let allowed = origin.filter(|o| self.is_allowed_origin(o));
        let passed = Passed {
            cors_origin: allowed.map(str::to_string),
        };
        if guard == Guard::Open {
            return Ok(passed);
        }
        let host = req.header("Host").map(str::trim).filter(|h| !h.is_empty());
        if let Some(host) = host {
            if !self.is_ingress_proxy(req) && !self.is_local_host(host) {
                return Err(Refusal::Host(host.to_string()));
            }
        }
        if guard == Guard::Host {
            return Ok(passed);
        }
        if allowed.is_some() {
            return Ok(passed);
        }
        if let Some(origin) = origin {
            let proxied = self.is_ingress_proxy(req);
            if !host.is_some_and(|h| self.same_origin(origin, h, proxied)) {
                return Err(Refusal::Origin(origin.to_string()));
            }
        }
        let cross_site = req
            .header("Sec-Fetch-Site")
            .is_some_and(|s| s.trim().eq_ignore_ascii_case("cross-site"));
        if cross_site {
            return Err(Refusal::CrossSite);
        }
        Ok(passed)
    }

    fn is_ingress_proxy(&self, req: &Request) -> bool {
        self.ingress_proxy.is_some()
            && req.remote.map(|r| r.ip().to_canonical()) == self.ingress_proxy
    }

    fn is_allowed_origin(&self, origin: &str) -> bool {
        !self.allowed_origins.is_empty()
            && ApiOrigin::parse(origin.trim())
                .is_ok_and(|o| self.allowed_origins.contains(&o.web_origin()))
    }

    /// Whether the page at `origin` is the request's own: the host of `host` (the request's
    /// `Host`), and its port; without a port, the scheme hearth serves at its default port, or
    /// the other scheme at its default port for a name in `ALLOWED_HOSTS` or through the ingress
    /// proxy (`proxied`): a proxy in front that terminates TLS.
    fn same_origin(&self, origin: &str, host: &str, proxied: bool) -> bool {
        let (Ok(origin), Some((name, port))) = (ApiOrigin::parse(origin.trim()), split_host(host))
        else {
            return false;
        };
        if !origin.host.eq_ignore_ascii_case(name) {
            return false;
        }
        let default_of = |https: bool| if https { 443 } else { 80 };
        let origin_port = origin.port.unwrap_or(default_of(origin.is_https()));
        if let Some(port) = port {
            return origin_port == port;
        }
        if origin_port != default_of(origin.is_https()) {
            return false;
        }
        if origin.is_https() == self.tls {
            return true;
        }
        let name = bare(name).to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        proxied || self.allowed_hosts.iter().any(|h| h == name)
    }

    /// Whether `host` (a `Host` header) names this server on the home network.
    fn is_local_host(&self, host: &str) -> bool {
        let Some((name, _port)) = split_host(host) else {
            return false;
        };
        let name = name.strip_suffix('.').unwrap_or(name);
        if name.is_empty() {
            return false;
        }
        if bare(name).parse::<IpAddr>().is_ok() {
            return true;
        }
        let lower = name.to_ascii_lowercase();
        !lower.contains('.')
            || LOCAL_SUFFIXES
                .iter()
                .any(|s| lower.ends_with(s) && lower.len() > s.len())
            || self.names.contains(&lower)
    }
}

/// A refused `Host`'s name, as the log counts refusals: lower case, without its port or
/// trailing dot, cut to a DNS name's longest (a header may be far longer).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct RefusedName(String);

impl RefusedName {
    fn of(host: &str) -> RefusedName {
        let name = name_of(host).unwrap_or_else(|| host.to_ascii_lowercase());
        let end = name
            .char_indices()
            .map(|(at, c)| at + c.len_utf8())
            .take_while(|end| *end <= 253)
            .last()
            .unwrap_or(0);
        RefusedName(name[..end].to_string())
    }
}

impl fmt::Display for RefusedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", logged(&shown(&self.0)))
    }
}

impl Key for RefusedName {
    const BY: &'static str = "for";
    const KINDS: &'static str = "names";
}

/// The log line of a refused `Host` (the header's value): quoted and escaped, since a page or
/// a client wrote it, and the `ALLOWED_HOSTS` value that would admit it, when it is a DNS name.
struct HostRefused<'a>(&'a str);

impl fmt::Display for HostRefused<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refused Host {} (DNS-rebinding guard); ",
            logged(&shown(self.0))
        )?;
        match allowed_hosts_value(self.0) {
            Some(value) => write!(
                f,
                "if this is a name of this box, set ALLOWED_HOSTS={value}"
            ),
            None => write!(f, "it is not a host name ALLOWED_HOSTS could list"),
        }
    }
}

/// A cross-site request refused, as its log line says it.
struct PageRefused<'a> {
    request: &'a Request,
    refusal: &'a Refusal,
    from: IpAddr,
}

impl fmt::Display for PageRefused<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} from {} refused ({}): {}",
            self.request.method.as_str(),
            logged(&self.request.path),
            self.from,
            self.refusal.status(),
            logged(&self.refusal.message())
        )
    }
}

/// The `ALLOWED_HOSTS` value that admits a refused `host` (a `Host` header): its name, lower
/// case, without port or trailing dot, when that is a DNS name (so also safe to print as it is).
fn allowed_hosts_value(host: &str) -> Option<String> {
    name_of(host).filter(|name| crate::config::is_dns_name(name))
}

/// A `Host` header's name, lower case, without its port or trailing dot; `None` if it is not
/// `host[:port]`.
fn name_of(host: &str) -> Option<String> {
    let (name, _port) = split_host(host)?;
    Some(name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase())
}

/// Without IPv6 brackets.
fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

/// A `Host` header's host (IPv6 in brackets) and port; `None` if it is not `host[:port]`, or
/// its brackets hold no IPv6 address (`[evil]`, a zone id as in `[fe80::1%eth0]`).
fn split_host(value: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if value.starts_with('[') {
        let end = value.find(']')?;
        value[1..end].parse::<std::net::Ipv6Addr>().ok()?;
        let (host, rest) = value.split_at(end + 1);
        match rest {
            "" => (host, None),
            p => (host, Some(p.strip_prefix(':')?)),
        }
    } else if value.parse::<IpAddr>().is_ok() {
        // An IPv6 address without brackets: not a valid Host, but an unambiguous one.
        (value, None)
    } else {
        match value.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (value, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    (!host.contains(':') || host.starts_with('[') || host.parse::<IpAddr>().is_ok())
        .then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn browsers(hosts: &[&str], origins: &[&str]) -> Browsers {
        let mut config = Config::local("/nonexistent");
        config.api_origin = Some(ApiOrigin::parse("http://Nest-Server.Example.com:8000").unwrap());
        config.allowed_hosts = hosts.iter().map(|h| h.to_string()).collect();
        config.allowed_origins = origins.iter().map(|o| o.to_string()).collect();
        Browsers::new(&config)
    }

    use crate::http::Method;

    fn request(method: Method, headers: &[(&str, &str)]) -> Request {
        headers
            .iter()
            .fold(Request::new(method, "/status"), |r, (n, v)| {
                r.with_header(n, v)
            })
    }

    #[test]
    fn hosts_of_the_home_pass_and_others_get_421() {
        let b = browsers(&["proxy.example.net"], &[]);
        for host in [
            "192.168.1.10",
            "192.168.1.10:8082",
            "[::1]",
            "[fe80::1]:8082",
            "::1",
            "localhost",
            "localhost.:8082",
            "LOCALHOST",
            "raspberrypi",
            "homeassistant:8123",
            "hearth.local",
            "Hearth.LAN.",
            "hearth.home.arpa:8082",
            "nas.internal",
            "nest-server.example.com:8000",
            "NEST-SERVER.EXAMPLE.COM.",
            "proxy.example.net",
            "proxy.example.net:443",
        ] {
            let r = request(Method::Get, &[("Host", host)]);
            assert!(b.check(&r, Guard::Full).is_ok(), "{host}");
        }
        for host in [
            "evil.example",
            "evil.example:8082",
            "evil.example.",
            ".local",
            "evil.local.example",
            "192.168.1.10.evil.example",
            "hearth.local:http",
            "hearth.local:99999",
            "a:b:c",
            "[::1",
            "[::1]x",
            "[evil]",
            "[evil]:8082",
            "[fe80::1%eth0]",
            "[fe80::1%25eth0]:8082",
            "fe80::1%eth0",
            "proxy.example.net.evil.example",
        ] {
            let r = request(Method::Get, &[("Host", host)]);
            assert_eq!(
                b.check(&r, Guard::Host),
                Err(Refusal::Host(host.to_string())),
                "{host}"
            );
            // /health answers any name.
            assert!(b.check(&r, Guard::Open).is_ok(), "{host}");
        }
        // "local" is one label: a name without a dot, like "raspberrypi".
        assert!(
            b.check(&request(Method::Get, &[("Host", "local")]), Guard::Full)
                .is_ok()
        );
        // HTTP/1.0 sends no Host.
        assert!(b.check(&request(Method::Post, &[]), Guard::Full).is_ok());
    }

    #[test]
    fn foreign_pages_get_403_where_it_matters() {
        let b = browsers(&[], &["https://ha.example.com:8123"]);
        let host = ("Host", "192.168.1.10:8082");
        let own = request(
            Method::Post,
            &[
                host,
                ("Origin", "http://192.168.1.10:8082"),
                ("Sec-Fetch-Site", "same-origin"),
            ],
        );
        assert_eq!(b.check(&own, Guard::Full), Ok(Passed::default()));
        // Behind a TLS-terminating proxy the page is https and hearth sees plain HTTP: the
        // proxy's name must be in ALLOWED_HOSTS, else another app's page at the other default
        // port of the same host would pass.
        let proxied = request(
            Method::Post,
            &[("Host", "hearth.lan"), ("Origin", "https://hearth.lan")],
        );
        assert_eq!(
            b.check(&proxied, Guard::Full),
            Err(Refusal::Origin("https://hearth.lan".into()))
        );
        let behind_proxy = browsers(&["Hearth.LAN."], &[]);
        assert!(behind_proxy.check(&proxied, Guard::Full).is_ok());
        for origin in ["https://hearth.lan:8443", "http://hearth.lan:8080"] {
            let r = request(Method::Post, &[("Host", "hearth.lan"), ("Origin", origin)]);
            assert!(behind_proxy.check(&r, Guard::Full).is_err(), "{origin}");
        }
        // Served over TLS, the own origin without a port is https at 443; http at 80 is
        // another app's.
        let mut config = Config::local("/nonexistent");
        config.cert_dir = Some("/nonexistent/certs".into());
        let over_tls = Browsers::new(&config);
        for (origin, own) in [
            ("https://127.0.0.1", true),
            ("https://127.0.0.1:443", true),
            ("http://127.0.0.1", false),
            ("http://127.0.0.1:80", false),
        ] {
            let r = request(Method::Post, &[("Host", "127.0.0.1"), ("Origin", origin)]);
            assert_eq!(over_tls.check(&r, Guard::Full).is_ok(), own, "{origin}");
        }
        let default_port = request(
            Method::Post,
            &[("Host", "hearth.lan:80"), ("Origin", "http://hearth.lan")],
        );
        assert!(b.check(&default_port, Guard::Full).is_ok());
        for origin in [
            "http://evil.example",
            "null",
            "http://192.168.1.10",
            "http://192.168.1.10:8000",
            "https://ha.example.com",
            "garbage",
        ] {
            let r = request(Method::Post, &[host, ("Origin", origin)]);
            assert_eq!(
                b.check(&r, Guard::Full),
                Err(Refusal::Origin(origin.to_string())),
                "{origin}"
            );
            // The page and /info: a foreign page may not read them anyway (no CORS).
            assert!(b.check(&r, Guard::Host).is_ok(), "{origin}");
        }
        let cross = request(Method::Get, &[host, ("Sec-Fetch-Site", "Cross-Site")]);
        assert_eq!(b.check(&cross, Guard::Full), Err(Refusal::CrossSite));
        assert!(b.check(&cross, Guard::Host).is_ok());
        let same_site = request(Method::Get, &[host, ("Sec-Fetch-Site", "same-site")]);
        assert!(b.check(&same_site, Guard::Full).is_ok());
        // An own origin cannot be cross-site; if a browser says so, it wins.
        let odd = request(
            Method::Post,
            &[
                host,
                ("Origin", "http://192.168.1.10:8082"),
                ("Sec-Fetch-Site", "cross-site"),
            ],
        );
        assert_eq!(b.check(&odd, Guard::Full), Err(Refusal::CrossSite));
        // An allowed origin passes, cross-site as it is, and is told so with CORS headers.
        for origin in ["https://ha.example.com:8123", "HTTPS://HA.example.com:8123"] {
            let allowed = request(
                Method::Post,
                &[host, ("Origin", origin), ("Sec-Fetch-Site", "cross-site")],
            );
            let passed = b.check(&allowed, Guard::Full).unwrap();
            assert_eq!(passed.cors_origin.as_deref(), Some(origin));
            assert_eq!(
                passed.cors_headers(),
                [
                    (
                        "Access-Control-Allow-Origin".to_string(),
                        origin.to_string()
                    ),
                    ("Vary".to_string(), "Origin".to_string())
                ]
            );
        }
        // Preflights: allowed, own or none pass; a foreign one is refused on every route.
        let preflight = |origin: &str| request(Method::Options, &[host, ("Origin", origin)]);
        assert!(
            !b.check(&preflight("https://ha.example.com:8123"), Guard::Full)
                .unwrap()
                .preflight_headers()
                .is_empty()
        );
        assert_eq!(
            b.check(&preflight("http://evil.example"), Guard::Full),
            Err(Refusal::Origin("http://evil.example".into()))
        );
        assert_eq!(
            b.check(&request(Method::Options, &[host]), Guard::Full),
            Ok(Passed::default())
        );
    }

    #[test]
    fn the_ingress_proxy_may_name_home_assistant_by_any_name() {
        let mut config = Config::local("/nonexistent");
        config.ingress_proxy = Some("172.30.32.2".parse().unwrap());
        let b = Browsers::new(&config);
        // What the Supervisor forwards from a browser using Home Assistant at a public name.
        let mut r = request(
            Method::Post,
            &[
                ("Host", "abcdef.ui.nabu.casa"),
                ("Origin", "https://abcdef.ui.nabu.casa"),
                ("Sec-Fetch-Site", "same-origin"),
                ("X-Ingress-Path", "/api/hassio_ingress/0123abcd"),
            ],
        );
        r.remote = Some("172.30.32.2:40000".parse().unwrap());
        assert!(b.check(&r, Guard::Full).is_ok());
        // A foreign page is refused through the proxy as well.
        r.headers[1].1 = "https://evil.example".into();
        assert_eq!(
            b.check(&r, Guard::Full),
            Err(Refusal::Origin("https://evil.example".into()))
        );
        // The same name from any other address is refused.
        r.remote = Some("172.30.32.1:40000".parse().unwrap());
        assert_eq!(
            b.check(&r, Guard::Full),
            Err(Refusal::Host("abcdef.ui.nabu.casa".into()))
        );
    }

    /// A FritzBox's `raspberrypi.fritz.box`: the box's host name under resolv.conf's search
    /// domain passes with no setting; nothing else under the domain does.
    #[test]
    fn the_box_names_pass_and_no_other_name_under_their_domains() {
        let mut config = Config::local("/nonexistent");
        config.box_names = Some(crate::config::BoxNames::of(
            &["raspberrypi"],
            Some("nameserver 192.168.178.1\nsearch fritz.box example.com\ndomain home\n"),
        ));
        let b = Browsers::new(&config);
        let passes = |host: &str| {
            b.check(&request(Method::Get, &[("Host", host)]), Guard::Full)
                .is_ok()
        };
        for host in [
            "raspberrypi.fritz.box",
            "raspberrypi.fritz.box:8000",
            "RaspberryPi.Fritz.Box.",
            "raspberrypi.example.com:8082",
            "raspberrypi.home",
        ] {
            assert!(passes(host), "{host}");
        }
        for host in [
            "other.fritz.box",
            "fritz.box",
            "evil.example",
            "evil.example.com",
            "example.com",
            "raspberrypi.evil.example",
            "raspberrypi.fritz.box.evil.example",
            "x.raspberrypi.fritz.box",
            "pi.home",
        ] {
            assert!(!passes(host), "{host}");
        }
        // Without the box's names (a test's configuration), the same name is refused.
        assert!(!browsers(&[], &[]).is_local_host("raspberrypi.fritz.box"));
    }

    /// The line a refused Host is logged with names the `ALLOWED_HOSTS` value that admits it,
    /// and that value, read as the setting is, does admit it.
    #[test]
    fn a_refused_host_is_logged_with_the_allowed_hosts_value_that_admits_it() {
        let b = browsers(&[], &[]);
        for (host, value) in [
            ("pi.home", "pi.home"),
            ("Pi.Home.:8082", "pi.home"),
            ("nas.localdomain", "nas.localdomain"),
            ("raspberrypi.fritz.box:8000", "raspberrypi.fritz.box"),
            ("pi.router", "pi.router"),
            ("evil.example", "evil.example"),
        ] {
            let refused = b.check(&request(Method::Get, &[("Host", host)]), Guard::Full);
            assert_eq!(refused, Err(Refusal::Host(host.to_string())), "{host}");
            assert_eq!(
                HostRefused(host).to_string(),
                format!(
                    "refused Host \"{host}\" (DNS-rebinding guard); if this is a name of this \
                     box, set ALLOWED_HOSTS={value}"
                )
            );
            let env = |k: &str| (k == "ALLOWED_HOSTS").then(|| value.to_string());
            let config = Config::resolve(&crate::config::Sources::new(&env)).unwrap();
            let admitted = Browsers::new(&config);
            assert!(
                admitted
                    .check(&request(Method::Get, &[("Host", host)]), Guard::Full)
                    .is_ok(),
                "{host}"
            );
        }
        // What no ALLOWED_HOSTS value admits, and a value that would start a log line of its own.
        for (host, shown) in [
            ("[evil]:8082", "\"[evil]:8082\""),
            ("hearth.local:http", "\"hearth.local:http\""),
            ("a b.example", "\"a b.example\""),
            (
                "evil.example\nERROR hearth: forged",
                "\"evil.example\\nERROR hearth: forged\"",
            ),
        ] {
            assert_eq!(
                HostRefused(host).to_string(),
                format!(
                    "refused Host {shown} (DNS-rebinding guard); it is not a host name \
                     ALLOWED_HOSTS could list"
                )
            );
        }
        // The log counts a name once, whatever its case, port or trailing dot; and a header
        // of any length as a DNS name's longest at most.
        assert!(RefusedName::of("PI.home.:8082") == RefusedName::of("pi.home"));
        assert_eq!(RefusedName::of(&"é".repeat(1000)).0.len(), 252);
        let now = crate::util::clock::ManualClock::at(0).clock().now();
        let mut log = b.refused_hosts.lock();
        assert_eq!(
            log.refused(RefusedName::of("pi.home"), now).lines(),
            [crate::util::refusals::Line::First]
        );
        assert!(
            log.refused(RefusedName::of("PI.HOME:8000"), now)
                .lines()
                .is_empty()
        );
        assert_eq!(
            log.refused(RefusedName::of("nas.lan.example"), now).lines(),
            [crate::util::refusals::Line::First]
        );
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let long = "a".repeat(300);
        let message = Refusal::Host(long).message();
        assert!(
            message.contains(&format!("\"{}...\"", "a".repeat(100))),
            "{message}"
        );
    }
}
