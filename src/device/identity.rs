//! Which thermostat sent a request: its serial (from the first source that yields a valid one)
//! and its Basic-auth password (its local API key).

use super::DeviceError;
use crate::http::Request;

/// Real serials are 16 characters; anything shorter than this after cleaning is refused.
const MIN_SERIAL: usize = 10;
const MAX_SERIAL: usize = 64;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub serial: Option<String>,
    pub password: Option<String>,
    /// Every serial the request names, by any source, `serial` first: each must be given its
    /// pinned password, whichever one the request is served for.
    pub named: Vec<String>,
}

/// Strips everything but ASCII letters and digits and upper-cases the rest; `None` if fewer
/// than 10 (or more than 64) characters remain.
pub fn sanitize_serial(raw: &str) -> Option<String> {
    let s: String = raw
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect();
    (MIN_SERIAL..=MAX_SERIAL).contains(&s.len()).then_some(s)
}

/// `d.SERIAL.suffix` → `SERIAL`; a name without dots is used whole.
fn serial_from_user_id(user: &str) -> Option<String> {
    let mut parts = user.split('.');
    let first = parts.next().unwrap_or("");
    let candidate = match parts.next() {
        Some(second) if !second.is_empty() => second,
        _ => first,
    };
    sanitize_serial(candidate)
}

/// The serial and password of a request. Sources, in order: Basic-auth user, `X-nl-client-id`,
/// `X-nl-device-id`, `X-NL-Device-Serial`, `?serial=`, then `path_serial`.
pub fn identify(req: &Request, path_serial: Option<&str>) -> Result<Identity, DeviceError> {
    let mut id = Identity::default();
    let mut named: Vec<Option<String>> = Vec::new();
    if let Some((user, password)) = basic_credentials(req)? {
        named.push(serial_from_user_id(&user));
        id.password = Some(password).filter(|p| !p.is_empty());
    }
    named.push(req.header("X-nl-client-id").and_then(serial_from_user_id));
    for header in ["X-nl-device-id", "X-NL-Device-Serial"] {
        named.push(req.header(header).and_then(sanitize_serial));
    }
    // An undecodable query string is refused only when nothing before it named the serial.
    let q = match req.query_param("serial") {
        Ok(q) => q,
        Err(_) if named.iter().any(Option::is_some) => None,
        Err(_) => return Err(DeviceError::BadEncoding("query string")),
    };
    named.push(q.as_deref().and_then(sanitize_serial));
    named.push(path_serial.and_then(sanitize_serial));
    for serial in named.into_iter().flatten() {
        if !id.named.contains(&serial) {
            id.named.push(serial);
        }
    }
    id.serial = id.named.first().cloned();
    Ok(id)
}

/// The user and password of a Basic `Authorization` header. A header that is not Basic or not
/// valid base64 is ignored (as the Python server does); one that decodes to something other
/// than UTF-8 is refused.
fn basic_credentials(req: &Request) -> Result<Option<(String, String)>, DeviceError> {
    req.basic_credentials()
        .map_err(|_| DeviceError::BadEncoding("Authorization header"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;
    use base64::Engine;

    fn basic(user_pass: &str) -> String {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(user_pass)
        )
    }

    #[test]
    fn sanitizing() {
        assert_eq!(
            sanitize_serial("ABC123DEF456").as_deref(),
            Some("ABC123DEF456")
        );
        assert_eq!(
            sanitize_serial("abc-123-def-456").as_deref(),
            Some("ABC123DEF456")
        );
        assert_eq!(sanitize_serial("ABC123"), None);
        assert_eq!(sanitize_serial(""), None);
        assert_eq!(sanitize_serial("    "), None);
        assert_eq!(sanitize_serial(&"A".repeat(200)), None);
    }

    #[test]
    fn basic_auth_user_id_forms() {
        let req = Request::new(Method::Post, "/").with_header(
            "Authorization",
            &basic("d.02AA01AC0000SIM1.5F3C9A1B:c0ffee"),
        );
        let id = identify(&req, None).unwrap();
        assert_eq!(id.serial.as_deref(), Some("02AA01AC0000SIM1"));
        assert_eq!(id.password.as_deref(), Some("c0ffee"));
        let req = Request::new(Method::Post, "/")
            .with_header("Authorization", &basic("nest.02AA01AB501203EQ:x"));
        assert_eq!(
            identify(&req, None).unwrap().serial.as_deref(),
            Some("02AA01AB501203EQ")
        );
        let req = Request::new(Method::Post, "/")
            .with_header("Authorization", &basic("ABC123DEF456:password"));
        assert_eq!(
            identify(&req, None).unwrap().serial.as_deref(),
            Some("ABC123DEF456")
        );
    }

    #[test]
    fn falls_through_the_sources_in_order() {
        let short = Request::new(Method::Get, "/?serial=QUERYSERIAL01")
            .with_header("Authorization", &basic("short:pw"))
            .with_header("X-NL-Device-Serial", "headerserial01");
        let id = identify(&short, Some("PATHSERIAL0001")).unwrap();
        assert_eq!(id.serial.as_deref(), Some("HEADERSERIAL01"));
        assert_eq!(id.password.as_deref(), Some("pw"));
        let client_id =
            Request::new(Method::Get, "/").with_header("X-nl-client-id", "d.02AA01AC0000SIM1.abc");
        assert_eq!(
            identify(&client_id, None).unwrap().serial.as_deref(),
            Some("02AA01AC0000SIM1")
        );
        let path_only = Request::new(Method::Get, "/");
        assert_eq!(
            identify(&path_only, Some("pathserial0001"))
                .unwrap()
                .serial
                .as_deref(),
            Some("PATHSERIAL0001")
        );
        let named = identify(&short, Some("PATHSERIAL0001")).unwrap().named;
        assert_eq!(named, ["HEADERSERIAL01", "QUERYSERIAL01", "PATHSERIAL0001"]);
        let bearer = Request::new(Method::Get, "/").with_header("Authorization", "Bearer nle_x");
        assert_eq!(identify(&bearer, None).unwrap(), Identity::default());
        let junk =
            Request::new(Method::Get, "/").with_header("Authorization", "Basic !!!notbase64");
        assert_eq!(identify(&junk, None).unwrap(), Identity::default());
    }

    #[test]
    fn undecodable_credentials_are_refused() {
        let bad = base64::engine::general_purpose::STANDARD.encode([0xff, 0xfe, b':', b'x']);
        let req =
            Request::new(Method::Get, "/").with_header("Authorization", &format!("Basic {bad}"));
        assert!(matches!(
            identify(&req, None),
            Err(DeviceError::BadEncoding(_))
        ));
        let req = Request::new(Method::Get, "/?serial=%FF%FE");
        assert!(matches!(
            identify(&req, None),
            Err(DeviceError::BadEncoding(_))
        ));
    }
}
