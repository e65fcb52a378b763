//! The names this box goes by on the home network, which the `Host` check of both ports admits
//! without `ALLOWED_HOSTS` ([`crate::browser`]): its host name (the kernel's, and
//! `/etc/hostname`'s when it differs), and that name under each domain of
//! `/etc/resolv.conf`'s `search` and `domain` lines: `raspberrypi` with `search fritz.box`
//! admits `raspberrypi.fritz.box`, the name a FritzBox gives it. (Its `.local` name passes by
//! the rule for `.local`, and `API_ORIGIN`'s host by its own.)
//!
//! A domain of the search list is one the box's own resolver completes its short names under,
//! so whoever answers for that zone already answers for what this box's names mean. A search
//! domain admits exactly one name under it per host name: a box named `pi` with
//! `search example.com` admits `pi.example.com`, never `other.example.com` or any other name
//! under the domain, which still get 421, as every foreign name does.
//!
//! Read once, when the server starts ([`BoxNames::of_this_box`], called by `server` when the
//! configuration holds none): a changed host name or search list needs a restart. What is read
//! is bounded: the first [`HOSTNAME_BYTES`] of each host name file, the first
//! [`RESOLV_CONF_BYTES`] of resolv.conf, its first [`MAX_DOMAINS`] domains; anything that is
//! not a DNS name ([`is_dns_name`]) is left out. Without a readable resolv.conf (missing, as in
//! some containers, or unreadable: logged) the host names alone are admitted.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The kernel's host name (what `uname -n` says).
pub const KERNEL_HOSTNAME: &str = "/proc/sys/kernel/hostname";
/// The host name the system sets at boot.
pub const HOSTNAME_FILE: &str = "/etc/hostname";
/// The resolver's configuration: the search list and the local domain.
pub const RESOLV_CONF: &str = "/etc/resolv.conf";

/// Bytes read of a host name file at most (a DNS name is 253 at most).
pub const HOSTNAME_BYTES: u64 = 1024;
/// Bytes read of resolv.conf at most; the rest is ignored (logged).
pub const RESOLV_CONF_BYTES: u64 = 64 * 1024;
/// Domains taken from resolv.conf at most (glibc used 6 for years); the rest are ignored
/// (logged).
pub const MAX_DOMAINS: usize = 32;

/// This box's names (see the module's documentation): lower case, without a trailing dot, each
/// once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BoxNames {
    names: Vec<String>,
}

impl BoxNames {
    /// The names of a box called `hostnames` (each the text of a host name file: its first line
    /// that is not empty or a `#` comment) with `resolv_conf` (its text, if it has one).
    pub fn of(hostnames: &[&str], resolv_conf: Option<&str>) -> BoxNames {
        BoxNames::from_parts(hostnames, resolv_conf.map(domains).unwrap_or_default().0)
    }

    fn from_parts(hostnames: &[&str], domains: Vec<String>) -> BoxNames {
        let mut names: Vec<String> = Vec::new();
        let mut add = |name: String| {
            if !names.contains(&name) {
                names.push(name);
            }
        };
        let hosts: Vec<String> = hostnames.iter().filter_map(|h| hostname(h)).collect();
        for host in &hosts {
            add(host.clone());
        }
        for host in &hosts {
            let short = host.split('.').next().unwrap_or(host);
            for domain in &domains {
                let name = format!("{short}.{domain}");
                if is_dns_name(&name) {
                    add(name);
                }
            }
        }
        BoxNames { names }
    }

    /// This machine's names: [`KERNEL_HOSTNAME`], [`HOSTNAME_FILE`] and [`RESOLV_CONF`], read
    /// now; a file that cannot be read is logged and left out.
    pub fn of_this_box() -> BoxNames {
        BoxNames::read(
            &[Path::new(KERNEL_HOSTNAME), Path::new(HOSTNAME_FILE)],
            Path::new(RESOLV_CONF),
        )
    }

    /// The names of a box whose host name files and resolv.conf are these files.
    pub fn read(hostname_files: &[&Path], resolv_conf: &Path) -> BoxNames {
        let hostnames: Vec<String> = hostname_files
            .iter()
            .filter_map(|path| match read_at_most(path, HOSTNAME_BYTES) {
                Ok(Some((text, _))) => Some(text),
                Ok(None) => None,
                Err(e) => {
                    log::warn!("cannot read {}: {e}", path.display());
                    None
                }
            })
            .collect();
        let hostnames: Vec<&str> = hostnames.iter().map(String::as_str).collect();
        let domains = match read_at_most(resolv_conf, RESOLV_CONF_BYTES) {
            Ok(Some((text, cut))) => {
                let (domains, more) = domains(&text);
                if cut || more {
                    log::warn!(
                        "{}: only the domains in its first {RESOLV_CONF_BYTES} bytes, {MAX_DOMAINS} \
                         at most, give this box's names",
                        resolv_conf.display()
                    );
                }
                domains
            }
            Ok(None) => Vec::new(),
            Err(e) => {
                log::warn!(
                    "cannot read {}: {e}; only the host name counts as this box's name",
                    resolv_conf.display()
                );
                Vec::new()
            }
        };
        BoxNames::from_parts(&hostnames, domains)
    }

    /// The names, lower case, without a trailing dot.
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

/// A host name file's name: its first line that is not empty or a comment, lower case, without
/// a trailing dot, if it is a DNS name (the kernel's `(none)` is not).
fn hostname(text: &str) -> Option<String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let name = line.strip_suffix('.').unwrap_or(line).to_ascii_lowercase();
    is_dns_name(&name).then_some(name)
}

/// The domains of resolv.conf's `search` and `domain` lines, in order, each once, lower case,
/// without a trailing dot, DNS names only (the root, `.`, is none); at most [`MAX_DOMAINS`],
/// and whether there were more.
fn domains(text: &str) -> (Vec<String>, bool) {
    let mut domains: Vec<String> = Vec::new();
    let mut more = false;
    for line in text.lines() {
        let mut words = line.split_whitespace();
        if !matches!(words.next(), Some("search" | "domain")) {
            continue;
        }
        // A comment may follow on the line.
        for word in words.take_while(|w| !w.starts_with(['#', ';'])) {
            let domain = word.strip_suffix('.').unwrap_or(word).to_ascii_lowercase();
            if !is_dns_name(&domain) || domains.contains(&domain) {
                continue;
            }
            if domains.len() == MAX_DOMAINS {
                more = true;
            } else {
                domains.push(domain);
            }
        }
    }
    (domains, more)
}

/// Whether `name` (lower case, without a trailing dot) is a DNS name: 253 characters at most,
/// labels of 1 to 63 letters, digits, `-` and `_` (which some home networks' names use).
pub(crate) fn is_dns_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
        })
}

/// The text of the first `limit` bytes of the regular file at `path` (invalid UTF-8 replaced),
/// and whether there was more; `None` when there is no such file. Opened without blocking, so
/// a FIFO in its place cannot hold the start up; anything but a regular file is an error.
fn read_at_most(path: &Path, limit: u64) -> io::Result<Option<(String, bool)>> {
    let file: File = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    let cut = bytes.len() as u64 > limit;
    bytes.truncate(limit as usize);
    Ok(Some((String::from_utf8_lossy(&bytes).into_owned(), cut)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(hostnames: &[&str], resolv_conf: Option<&str>) -> Vec<String> {
        BoxNames::of(hostnames, resolv_conf).names().to_vec()
    }

    #[test]
    fn the_host_name_under_each_search_domain_and_the_domain() {
        let resolv = "# Generated by NetworkManager\n\
                      nameserver 192.168.178.1\n\
                      search fritz.box Home. lan\n\
                      domain localdomain ; the router's\n\
                      options edns0\n";
        assert_eq!(
            names(&["RaspberryPi\n"], Some(resolv)),
            [
                "raspberrypi",
                "raspberrypi.fritz.box",
                "raspberrypi.home",
                "raspberrypi.lan",
                "raspberrypi.localdomain",
            ]
        );
        // The kernel's name and /etc/hostname's, when they differ (a name changed since boot);
        // an FQDN host name puts its first label under the domains.
        assert_eq!(
            names(
                &["pi.fritz.box", "# set by the installer\n\nnas.\n"],
                Some("search fritz.box\n")
            ),
            ["pi.fritz.box", "nas", "nas.fritz.box"]
        );
        // Without resolv.conf, the host name alone.
        assert_eq!(names(&["pi"], None), ["pi"]);
        // The kernel's "(none)", empty files, garbage: no names.
        assert!(
            names(
                &["(none)", "", "\n# only a comment\n", "a b"],
                Some("search lan")
            )
            .is_empty()
        );
    }

    #[test]
    fn only_dns_names_are_taken_and_only_so_many() {
        let resolv = "search . evil/ a..b xn--bcher-kva.example -bad- ok_name \
                      searchish\nsearchx nope.example\n#search hidden.example\n";
        assert_eq!(
            names(&["pi"], Some(resolv)),
            [
                "pi",
                "pi.xn--bcher-kva.example",
                "pi.-bad-",
                "pi.ok_name",
                "pi.searchish"
            ]
        );
        let long = format!("search {}", "d.".repeat(200));
        assert_eq!(names(&["pi"], Some(&long)), ["pi"]);
        let many: String = (0..100).map(|i| format!("search d{i}.lan\n")).collect();
        let (domains, more) = domains(&many);
        assert_eq!((domains.len(), more), (MAX_DOMAINS, true));
        assert_eq!(names(&["pi"], Some(&many)).len(), 1 + MAX_DOMAINS);
        assert!(is_dns_name(&"a".repeat(63)) && !is_dns_name(&"a".repeat(64)));
        assert!(!is_dns_name("") && !is_dns_name("UPPER") && !is_dns_name("é.lan"));
    }

    #[test]
    fn files_are_read_bounded_and_a_missing_resolv_conf_leaves_the_host_name() {
        let dir = std::env::temp_dir().join(format!(
            "hearth-box-names-{}-{}",
            std::process::id(),
            crate::util::random::hex(4).unwrap()
        ));
        std::fs::create_dir(&dir).unwrap();
        let (kernel, etc, resolv) = (dir.join("kernel"), dir.join("hostname"), dir.join("resolv"));
        std::fs::write(&kernel, "raspberrypi\n").unwrap();
        std::fs::write(&resolv, "nameserver 10.0.0.1\nsearch fritz.box\n").unwrap();
        let read = |resolv: &Path| BoxNames::read(&[&kernel, &etc], resolv).names().to_vec();
        // No /etc/hostname: the kernel's name.
        assert_eq!(read(&resolv), ["raspberrypi", "raspberrypi.fritz.box"]);
        assert_eq!(read(&dir.join("missing")), ["raspberrypi"]);
        // A directory (unreadable as a file) and a FIFO (which would block a plain open).
        assert_eq!(read(&dir), ["raspberrypi"]);
        let fifo = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
        assert_eq!(read(&fifo), ["raspberrypi"]);
        // Only the first RESOLV_CONF_BYTES count.
        let mut big = "search first.lan\n".to_string();
        big.push_str(&"#".repeat(RESOLV_CONF_BYTES as usize));
        big.push_str("\nsearch late.lan\n");
        std::fs::write(&resolv, big).unwrap();
        assert_eq!(read(&resolv), ["raspberrypi", "raspberrypi.first.lan"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
