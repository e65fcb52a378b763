//! The public origin thermostats are told to use (`API_ORIGIN`).

/// The public origin thermostats use: `scheme://host[:port]`, no path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiOrigin {
    pub scheme: String,
    /// As written; an IPv6 literal keeps its brackets.
    pub host: String,
    pub port: Option<u16>,
}

impl ApiOrigin {
    pub fn parse(raw: &str) -> Result<ApiOrigin, String> {
        const SHAPE: &str =
            "must look like http://192.168.1.10:8000 (scheme, host, optional port, no path)";
        let (scheme, rest) = raw.split_once("://").ok_or(SHAPE)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "http" && scheme != "https" {
            return Err(SHAPE.to_string());
        }
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', ' ']) {
            return Err(SHAPE.to_string());
        }
        let (host, port) = if let Some(v6) = rest.strip_prefix('[') {
            let (inside, after) = v6.split_once(']').ok_or(SHAPE)?;
            let port = match after {
                "" => None,
                p => Some(p.strip_prefix(':').ok_or(SHAPE)?),
            };
            (format!("[{inside}]"), port)
        } else {
            match rest.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (rest.to_string(), None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or("port must be a number from 1 to 65535")?,
            ),
        };
        if host.is_empty() {
            return Err(SHAPE.to_string());
        }
        Ok(ApiOrigin { scheme, host, port })
    }

    /// The origin as configured (no port added).
    pub fn raw(&self) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{}", self.scheme, self.host, p),
            None => format!("{}://{}", self.scheme, self.host),
        }
    }

    /// The origin with an explicit port: the firmware finds the port by scanning for `:digits`
    /// and, without one, cannot be woken by pushes. A missing port becomes `fallback_port`
    /// (the device port), even for https, as the Python server does.
    pub fn with_port(&self, fallback_port: u16) -> String {
        format!(
            "{}://{}:{}",
            self.scheme,
            self.host,
            self.port.unwrap_or(fallback_port)
        )
    }

    pub fn is_https(&self) -> bool {
        self.scheme == "https"
    }

    /// The origin as a browser writes it in an `Origin` header: scheme and host in lower case,
    /// the port only when it is not the scheme's default.
    pub fn web_origin(&self) -> String {
        let default = if self.is_https() { 443 } else { 80 };
        let host = self.host.to_ascii_lowercase();
        match self.port.filter(|p| *p != default) {
            Some(p) => format!("{}://{host}:{p}", self.scheme),
            None => format!("{}://{host}", self.scheme),
        }
    }

    /// The host without IPv6 brackets.
    pub fn bare_host(&self) -> &str {
        self.host.trim_start_matches('[').trim_end_matches(']')
    }
}
