//! `GET /` on the control port: the dashboard, one self-contained page compiled into the binary
//! (its CSS and script inline; nothing from a CDN, no fonts, no build step), so it works on a
//! home network with no internet.
//!
//! The page only talks to the control API's own routes (`/api/devices`, `/status`, `/command`,
//! `/api/events`, `/api/history`, `/api/schedule`, `/api/config`, `/api/register`) with URLs
//! relative to itself, so it works under a path prefix. Behind Home Assistant ingress the
//! prefix comes in `X-Ingress-Path`, which is put in `<body data-ingress-path="...">` as the
//! Python server does.

use std::sync::OnceLock;

use base64::Engine;
use sha2::{Digest, Sha256};

use crate::http::{Request, Response};

const PAGE: &str = include_str!("page.html");
/// Longest `X-Ingress-Path` honoured; anything longer (or not a plain path) is ignored.
const MAX_INGRESS_PATH: usize = 512;

/// The page's own inline script and style block, named by their hashes, and nothing else may
/// run or style it (no other inline script, no `style` attributes); it may fetch from its own
/// origin only.
fn content_security_policy() -> &'static str {
    static POLICY: OnceLock<String> = OnceLock::new();
    POLICY.get_or_init(|| {
        format!(
            "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; \
             img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'",
            inline_hash("<script>", "</script>"),
            inline_hash("<style>", "</style>"),
        )
    })
}

/// `'sha256-…'` of the text between `open` and `close` in the page, as browsers hash it.
fn inline_hash(open: &str, close: &str) -> String {
    let inner = PAGE
        .split_once(open)
        .and_then(|(_, rest)| rest.split_once(close))
        .map_or("", |(inner, _)| inner);
    let digest = Sha256::digest(inner.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

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
            // The page differs with the prefix: a shared cache must not mix them up.
            ("Vary".into(), "X-Ingress-Path".into()),
            (
                "Content-Security-Policy".into(),
                content_security_policy().into(),
            ),
            ("X-Content-Type-Options".into(), "nosniff".into()),
        ],
        body: body.into_bytes(),
    }
}

/// An absolute path of printable ASCII on this host: what an ingress prefix looks like. Not
/// `//host/...` or a backslash, which a browser would take as another origin.
fn is_plain_path(p: &str) -> bool {
    p.starts_with('/')
        && !p.starts_with("//")
        && !p.contains('\\')
        && p.len() <= MAX_INGRESS_PATH
        && p.bytes().all(|b| b.is_ascii_graphic())
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
    fn the_policy_names_the_script_and_the_style() {
        assert_eq!(PAGE.matches("<script>").count(), 1);
        assert_eq!(PAGE.matches("<style>").count(), 1);
        assert!(
            !PAGE.contains(" style=\""),
            "style attributes would be refused"
        );
        let policy = content_security_policy();
        assert_eq!(policy.matches("'sha256-").count(), 2, "{policy}");
        assert!(!policy.contains("unsafe-inline"));
        // The hash of nothing would mean the block was not found.
        assert!(!policy.contains(&inline_hash("<nothing>", "</nothing>")));
    }

    #[test]
    fn ingress_paths_are_escaped_or_ignored() {
        assert!(is_plain_path("/api/hassio_ingress/abc123"));
        assert!(!is_plain_path("relative/path"));
        assert!(!is_plain_path("//evil.example/x"));
        assert!(!is_plain_path("/\\evil.example"));
        assert!(!is_plain_path("/with space"));
        assert!(!is_plain_path(&format!("/{}", "a".repeat(600))));
        assert_eq!(
            escape_attribute("/x\"><script>&'"),
            "/x&quot;&gt;&lt;script&gt;&amp;&#39;"
        );
    }
}
