//! `GET /` on the control port: the dashboard. The page is a shell (`page.html`) and its parts,
//! one stylesheet and one script per part of the page in `ui/` ([`assets`]), all compiled into
//! the binary: nothing from a CDN, no fonts, no build step, so it works on a home network with
//! no internet.
//!
//! The page only talks to the control API's own routes with URLs relative to itself, so it
//! works under a path prefix. Behind Home Assistant ingress the prefix comes in
//! `X-Ingress-Path`, which is put in `<body data-ingress-path="...">` as the Python server
//! does, and in a `<base>` so the page's files load from under the prefix whatever the URL the
//! browser shows.

pub(crate) mod assets;
mod stored;

use crate::http::{Request, Response};
use stored::{Stored, gzipped};

/// `page.html`, gzipped by `build.rs`.
const PAGE: Stored = gzipped!("page.html");
/// Longest `X-Ingress-Path` honoured; anything longer (or not a plain path) is ignored.
const MAX_INGRESS_PATH: usize = 512;

/// Scripts, styles, images and the manifest from this server only, and no inline script or
/// style at all (the page has none), so injected markup cannot run; fetches go to this origin.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     connect-src 'self'; img-src 'self' data:; manifest-src 'self'; base-uri 'self'; \
     form-action 'none'; frame-ancestors 'self'";

/// The shell: its gzip member as stored to a client that accepts gzip, else inflated; with an
/// ingress prefix, inflated, rewritten and sent plain (11 KB, to Home Assistant's ingress
/// proxy), which spares the binary a compressor.
pub fn page(req: &Request) -> Response {
    let ingress = req
        .header("X-Ingress-Path")
        .map(str::trim)
        .filter(|p| is_plain_path(p));
    let member = PAGE
        .gzip()
        .filter(|_| ingress.is_none() && req.accepts_gzip());
    let body = match member {
        Some(member) => member.to_vec(),
        None => match (PAGE.plain(), ingress) {
            (Some(plain), Some(path)) => {
                rewrite(&String::from_utf8_lossy(&plain), path).into_bytes()
            }
            (Some(plain), None) => plain.into_owned(),
            (None, _) => return assets::unreadable("page.html"),
        },
    };
    let mut headers = vec![
        ("Content-Type".into(), "text/html; charset=utf-8".into()),
        ("Cache-Control".into(), "no-cache".into()),
        // The page differs with the prefix and comes gzipped or not: a shared cache must not
        // mix them up.
        ("Vary".into(), "X-Ingress-Path, Accept-Encoding".into()),
        (
            "Content-Security-Policy".into(),
            CONTENT_SECURITY_POLICY.into(),
        ),
        ("X-Content-Type-Options".into(), "nosniff".into()),
    ];
    if member.is_some() {
        headers.push(("Content-Encoding".into(), "gzip".into()));
    }
    Response {
        status: 200,
        headers,
        body,
    }
}

/// The shell under an ingress prefix: the prefix in `<body data-ingress-path="...">` and in a
/// `<base>`.
fn rewrite(page: &str, path: &str) -> String {
    page.replacen(
        "<body>",
        &format!("<body data-ingress-path=\"{}\">", escape_attribute(path)),
        1,
    )
    .replacen(
        "<head>",
        &format!(
            "<head>\n<base href=\"{}/\">",
            escape_attribute(path.trim_end_matches('/'))
        ),
        1,
    )
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

    /// The shell as written (what is served is checked against it in `stored`).
    const PAGE: &str = include_str!("page.html");

    #[test]
    fn the_page_is_self_contained() {
        assert_eq!(PAGE.matches("<body>").count(), 1);
        assert_eq!(PAGE.matches("<head>").count(), 1);
        let parts = assets::ASSETS
            .iter()
            .map(|a| String::from_utf8_lossy(&a.body()).into_owned());
        for (name, text) in std::iter::once(("page.html".into(), PAGE.into()))
            .chain(assets::ASSETS.iter().map(|a| a.name.to_string()).zip(parts))
        {
            let text: String = text;
            for outside in ["https://", "@import", "url(", "//cdn", "fonts."] {
                assert!(
                    !text.contains(outside),
                    "{name} refers outside itself: {outside}"
                );
            }
            // The one `http://` is SVG's namespace name, which is never fetched.
            assert_eq!(
                text.matches("http://").count(),
                text.matches("http://www.w3.org/2000/svg").count(),
                "{name}"
            );
        }
        // Every file the shell loads is relative, under ui/.
        for attr in ["src=\"", "href=\""] {
            for (at, _) in PAGE.match_indices(attr) {
                let value = &PAGE[at + attr.len()..];
                assert!(value.starts_with("ui/"), "{attr}{value:.40}");
            }
        }
    }

    /// The page's titles and its safety kinds are the server's ([`crate::alerts::Kind`]), so the
    /// banner reads as ntfy's title does and stands out exactly when ntfy's priority is high.
    #[test]
    fn the_page_names_the_alert_kinds_as_the_server_does() {
        let js = include_str!("ui/alerts.js");
        let safety = js
            .lines()
            .find(|l| l.starts_with("const SAFETY_KINDS"))
            .unwrap_or_default();
        for kind in crate::alerts::Kind::ALL {
            let name = kind.as_str();
            assert!(
                js.contains(&format!("{name}: \"{}\"", kind.title())),
                "alerts.js has another title for {name}"
            );
            assert_eq!(
                safety.contains(&format!("\"{name}\"")),
                kind.is_safety(),
                "{name}"
            );
        }
    }

    #[test]
    fn nothing_inline_runs_or_styles() {
        // Every <script> has a src; there is no <style> block and no style attribute, which
        // the policy (no 'unsafe-inline') would refuse.
        assert_eq!(
            PAGE.matches("<script").count(),
            PAGE.matches("<script defer src=\"ui/").count()
        );
        assert!(!PAGE.contains("<style"));
        assert!(!PAGE.contains(" style=\""));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }

    #[test]
    fn an_ingress_prefix_becomes_the_base_of_every_relative_url() {
        let req = Request::new(crate::http::Method::Get, "/")
            .with_header("X-Ingress-Path", "/api/hassio_ingress/abc");
        let body = String::from_utf8(page(&req).body).expect("utf-8");
        assert!(body.contains("<base href=\"/api/hassio_ingress/abc/\">"));
        assert!(body.contains("<body data-ingress-path=\"/api/hassio_ingress/abc\">"));
        let plain = String::from_utf8(page(&Request::new(crate::http::Method::Get, "/")).body)
            .expect("utf-8");
        assert!(!plain.contains("<base"));
    }

    #[test]
    fn the_shell_goes_gzipped_to_whoever_accepts_it_and_plain_to_the_rest() {
        let get = |headers: &[(&str, &str)]| {
            let req = headers
                .iter()
                .fold(Request::new(crate::http::Method::Get, "/"), |r, (n, v)| {
                    r.with_header(n, v)
                });
            page(&req)
        };
        let gzip = get(&[("Accept-Encoding", "gzip, deflate")]);
        assert_eq!(gzip.header("Content-Encoding"), Some("gzip"));
        let inflated = miniz_oxide::inflate::decompress_to_vec(&gzip.body[10..gzip.body.len() - 8])
            .expect("inflates");
        assert_eq!(inflated, PAGE.as_bytes());
        for refusing in [&[][..], &[("Accept-Encoding", "gzip;q=0")]] {
            let plain = get(refusing);
            assert_eq!(plain.header("Content-Encoding"), None);
            assert_eq!(plain.body, PAGE.as_bytes());
            assert_eq!(
                plain
                    .headers
                    .iter()
                    .filter(|(n, _)| n != "Content-Encoding")
                    .count(),
                gzip.headers.len() - 1
            );
        }
        // Under a prefix the page is rewritten, and sent plain whatever the client accepts.
        let ingress = ("X-Ingress-Path", "/api/hassio_ingress/abc");
        for headers in [&[ingress][..], &[ingress, ("Accept-Encoding", "gzip")]] {
            let under = get(headers);
            assert_eq!(under.header("Content-Encoding"), None);
            let text = String::from_utf8(under.body.clone()).expect("utf-8");
            assert!(text.contains("<base href=\"/api/hassio_ingress/abc/\">"));
            assert_eq!(under.headers, get(&[]).headers);
        }
        // Not a path: ignored, so the stored page as it is.
        let ignored = get(&[("X-Ingress-Path", "x"), ("Accept-Encoding", "gzip")]);
        assert_eq!(ignored, gzip);
        for r in [&gzip, &get(&[]), &get(&[ingress])] {
            assert_eq!(r.status, 200);
            assert_eq!(r.header("Vary"), Some("X-Ingress-Path, Accept-Encoding"));
            assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
            assert_eq!(r.header("Cache-Control"), Some("no-cache"));
            assert_eq!(r.header("X-Content-Type-Options"), Some("nosniff"));
            assert_eq!(
                r.header("Content-Security-Policy"),
                Some(CONTENT_SECURITY_POLICY)
            );
        }
        // HEAD is answered as GET (the edge leaves the body out).
        let head =
            Request::new(crate::http::Method::Head, "/").with_header("Accept-Encoding", "gzip");
        assert_eq!(page(&head), gzip);
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
