//! `GET /` on the control port: the dashboard, one self-contained page compiled into the binary
//! (its CSS and script inline; nothing from a CDN, no fonts, no build step), so it works on a
//! home network with no internet.
//!
//! The page only talks to the control API's own routes (`/api/devices`, `/status`, `/command`,
//! `/api/events`, `/api/history`, `/api/schedule`, `/api/config`, `/api/register`) with URLs
//! relative to itself, so it works under a path prefix. Behind Home Assistant ingress the
//! prefix comes in `X-Ingress-Path`, which is put in `<body data-ingress-path="...">` as the
//! Python server does.

use crate::http::{Request, Response};

const PAGE: &str = include_str!("page.html");
/// Longest `X-Ingress-Path` honoured; anything longer (or not a plain path) is ignored.
const MAX_INGRESS_PATH: usize = 512;

/// Inline script and style only; the page may fetch from its own origin and nothing else.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'self'";

pub fn page(req: &Request) -> Response {
    let ingress = req
        .header("X-Ingress-Path")
        .map(str::trim)
        .filter(|p| is_plain_path(p));
    let body = match ingress {
        Some(path) => PAGE.replacen(
            "<body>",
            &format!("<body data-ingress-path=\"{}\">", escape_attribute(path)),
            1,
        ),
        None => PAGE.to_string(),
    };
    Response {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/html; charset=utf-8".into()),
            ("Cache-Control".into(), "no-cache".into()),
            (
                "Content-Security-Policy".into(),
                CONTENT_SECURITY_POLICY.into(),
            ),
            ("X-Content-Type-Options".into(), "nosniff".into()),
        ],
        body: body.into_bytes(),
    }
}

/// An absolute path of printable ASCII: what an ingress prefix looks like.
fn is_plain_path(p: &str) -> bool {
    p.starts_with('/') && p.len() <= MAX_INGRESS_PATH && p.bytes().all(|b| b.is_ascii_graphic())
}

fn escape_attribute(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained() {
        assert_eq!(PAGE.matches("<body>").count(), 1);
        for outside in ["https://", "src=", "<link", "@import", "url("] {
            assert!(
                !PAGE.contains(outside),
                "the page refers outside itself: {outside}"
            );
        }
        // The one `http://` is SVG's namespace name, which is never fetched.
        assert_eq!(
            PAGE.matches("http://").count(),
            PAGE.matches("http://www.w3.org/2000/svg").count()
        );
    }

    #[test]
    fn ingress_paths_are_escaped_or_ignored() {
        assert!(is_plain_path("/api/hassio_ingress/abc123"));
        assert!(!is_plain_path("relative/path"));
        assert!(!is_plain_path("/with space"));
        assert!(!is_plain_path(&format!("/{}", "a".repeat(600))));
        assert_eq!(
            escape_attribute("/x\"><script>&'"),
            "/x&quot;&gt;&lt;script&gt;&amp;&#39;"
        );
    }
}
