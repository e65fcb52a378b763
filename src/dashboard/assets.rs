//! `GET /ui/<name>`: the page's stylesheets, scripts and images, compiled into the binary.
//! Each part of the page is its own small file (`src/dashboard/ui/`), written as it is served:
//! there is no build step for the page's authors. The text files are stored gzipped
//! ([`Stored`], `build.rs`) and sent so (`Content-Encoding: gzip`) to a client that accepts
//! gzip, inflated for one that does not; the PNGs are stored and sent as they are. Answers
//! carry an `ETag` (one per representation) and `Cache-Control: no-cache`, so a browser (or the
//! phone's home-screen app) asks again on every load and gets a 304 until hearth is upgraded.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::stored::{Stored, gzipped};
use crate::http::{Request, Response};

/// A file the page loads.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub stored: Stored,
}

const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const PNG: &str = "image/png";
const SVG: &str = "image/svg+xml";
const MANIFEST: &str = "application/manifest+json";

/// A text file of `ui/`, gzipped by `build.rs` (which gzips html, css, js, svg and
/// webmanifest files: any other kind named here fails to compile).
macro_rules! text {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            stored: gzipped!(concat!("ui/", $name)),
        }
    };
}

/// A file of `ui/` compiled in as it is (PNG, already compressed).
macro_rules! plain {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            stored: Stored::Plain(include_bytes!(concat!("ui/", $name))),
        }
    };
}

/// Every file under `ui/`, in no particular order (page.html sets the order they load in). The
/// PNG icons are drawn from `icon.svg` by `scripts/icons.sh`.
pub const ASSETS: &[Asset] = &[
    text!("base.css", CSS),
    text!("card.css", CSS),
    text!("chart.css", CSS),
    text!("energy.css", CSS),
    text!("schedule.css", CSS),
    text!("settings.css", CSS),
    text!("setup.css", CSS),
    text!("homekit.css", CSS),
    text!("accounts.css", CSS),
    text!("alerts.css", CSS),
    text!("alert-settings.css", CSS),
    text!("people.css", CSS),
    text!("api.js", JS),
    text!("util.js", JS),
    text!("cards.js", JS),
    text!("chart.js", JS),
    text!("energy.js", JS),
    text!("schedule.js", JS),
    text!("settings.js", JS),
    text!("setup.js", JS),
    text!("homekit.js", JS),
    text!("accounts.js", JS),
    text!("alerts.js", JS),
    text!("alert-settings.js", JS),
    text!("people.js", JS),
    text!("live.js", JS),
    text!("main.js", JS),
    text!("title.js", JS),
    text!("manifest.webmanifest", MANIFEST),
    text!("icon.svg", SVG),
    plain!("favicon-32.png", PNG),
    plain!("apple-touch-icon.png", PNG),
    plain!("icon-192.png", PNG),
    plain!("icon-512.png", PNG),
    plain!("icon-maskable-512.png", PNG),
];

/// The asset a `/ui/...` path names, if any.
pub fn find(path: &str) -> Option<(usize, &'static Asset)> {
    let name = path.strip_prefix("/ui/")?;
    ASSETS.iter().enumerate().find(|(_, a)| a.name == name)
}

/// Strong validators per asset, one per representation: the first 16 bytes of the SHA-256 of
/// what is stored, quoted, for the file itself, and the same with `-gzip` for the gzip member
/// (two representations, two tags: a 304 for one must not stand for the other).
fn etag(index: usize, gzip: bool) -> &'static str {
    static TAGS: OnceLock<Vec<[String; 2]>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let stored = match a.stored {
                    Stored::Plain(bytes) | Stored::Gzip(bytes) => bytes,
                };
                let digest = Sha256::digest(stored);
                let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                [format!("\"{hex}\""), format!("\"{hex}-gzip\"")]
            })
            .collect()
    })
    .get(index)
    .map_or("\"\"", |tags| tags[usize::from(gzip)].as_str())
}

pub fn serve(req: &Request, index: usize, asset: &Asset) -> Response {
    let member = asset.stored.gzip();
    let gzip = member.is_some() && req.accepts_gzip();
    let tag = etag(index, gzip);
    let mut headers = vec![
        ("Content-Type".into(), asset.content_type.into()),
        ("Cache-Control".into(), "no-cache".into()),
        ("ETag".into(), tag.into()),
        ("X-Content-Type-Options".into(), "nosniff".into()),
        // Opened on its own (the SVG icon, say), a file may load and run nothing.
        (
            "Content-Security-Policy".into(),
            "default-src 'none'".into(),
        ),
    ];
    if member.is_some() {
        // A shared cache must not give the gzip member to a client that did not ask for it.
        headers.push(("Vary".into(), "Accept-Encoding".into()));
    }
    let unchanged = req
        .header("If-None-Match")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    if unchanged {
        return Response {
            status: 304,
            headers,
            body: Vec::new(),
        };
    }
    let body = match member {
        Some(member) if gzip => {
            headers.push(("Content-Encoding".into(), "gzip".into()));
            member.to_vec()
        }
        _ => match asset.stored.plain() {
            Some(plain) => plain.into_owned(),
            None => return unreadable(asset.name),
        },
    };
    Response {
        status: 200,
        headers,
        body,
    }
}

/// A stored file that does not inflate: a broken build, which the unit tests rule out.
pub(super) fn unreadable(name: &str) -> Response {
    log::error!("dashboard: the stored {name} does not inflate");
    Response::error(
        500,
        "This file of the page is damaged in this build of hearth",
    )
}

/// The file itself, for the tests.
#[cfg(test)]
impl Asset {
    pub fn body(&self) -> Vec<u8> {
        self.stored.plain().expect("inflates").into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    /// The names the page's head or its manifest refer to, in order.
    fn named_in(text: &str, prefix: &str) -> Vec<String> {
        text.match_indices(prefix)
            .map(|(at, _)| {
                text[at + prefix.len()..]
                    .split('"')
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn every_file_the_page_names_is_served_and_every_served_file_is_named() {
        let page = include_str!("page.html");
        let manifest = include_str!("ui/manifest.webmanifest");
        let mut named = named_in(page, "\"ui/");
        named.extend(named_in(manifest, "\"src\": \""));
        for a in ASSETS {
            assert!(
                named.iter().any(|n| n == a.name),
                "neither page.html nor the manifest names {}",
                a.name
            );
            assert!(!a.body().is_empty(), "{} is empty", a.name);
        }
        for name in &named {
            assert!(
                find(&format!("/ui/{name}")).is_some(),
                "ui/{name} is named but not served"
            );
        }
    }

    #[test]
    fn icons_are_the_sizes_their_names_and_the_manifest_say() {
        let size = |name: &str| {
            let (_, a) = find(&format!("/ui/{name}")).expect(name);
            assert_eq!(a.content_type, PNG, "{name}");
            let body = a.body();
            assert_eq!(&body[..8], b"\x89PNG\r\n\x1a\n", "{name}");
            assert_eq!(&body[12..16], b"IHDR", "{name}");
            let be = |at: usize| {
                u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]])
            };
            (be(16), be(20))
        };
        assert_eq!(size("favicon-32.png"), (32, 32));
        assert_eq!(size("apple-touch-icon.png"), (180, 180));
        assert_eq!(size("icon-192.png"), (192, 192));
        assert_eq!(size("icon-512.png"), (512, 512));
        assert_eq!(size("icon-maskable-512.png"), (512, 512));
        let manifest: serde_json::Value =
            serde_json::from_str(include_str!("ui/manifest.webmanifest")).expect("json");
        for icon in manifest["icons"].as_array().expect("icons") {
            let src = icon["src"].as_str().expect("src");
            let (_, a) = find(&format!("/ui/{src}")).expect(src);
            assert_eq!(icon["type"].as_str(), Some(a.content_type), "{src}");
            if a.content_type == PNG {
                let (w, h) = size(src);
                assert_eq!(icon["sizes"].as_str(), Some(format!("{w}x{h}").as_str()));
            }
        }
        // Relative to the manifest (ui/): the page above it, wherever a proxy puts it.
        for field in ["start_url", "scope", "id"] {
            assert_eq!(manifest[field], "../", "{field}");
        }
        let (_, svg) = find("/ui/icon.svg").expect("svg");
        assert!(
            String::from_utf8_lossy(&svg.body())
                .starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\"")
        );
    }

    #[test]
    fn every_colour_is_a_variable_of_base_css_so_dark_mode_reaches_it() {
        for a in ASSETS
            .iter()
            .filter(|a| a.content_type == CSS || a.content_type == JS)
        {
            if a.name == "base.css" {
                continue;
            }
            let body = a.body();
            let text = String::from_utf8_lossy(&body);
            for (at, _) in text.match_indices('#') {
                let hex = text[at + 1..]
                    .chars()
                    .take_while(char::is_ascii_hexdigit)
                    .count();
                let after = text[at + 1 + hex..].chars().next().unwrap_or(' ');
                assert!(
                    !matches!(hex, 3 | 4 | 6 | 8) || after.is_ascii_alphanumeric() || after == '-',
                    "{} has a colour of its own: {:.12}; use a variable of base.css",
                    a.name,
                    &text[at..]
                );
            }
            for word in ["rgb(", "rgba(", "hsl("] {
                assert!(!text.contains(word), "{} names a colour: {word}", a.name);
            }
        }
    }

    #[test]
    fn a_known_tag_gets_304_and_no_body() {
        let (i, a) = find("/ui/api.js").expect("api.js");
        let first = serve(&Request::new(Method::Get, "/ui/api.js"), i, a);
        assert_eq!(first.status, 200);
        let tag = first.header("ETag").expect("etag").to_string();
        let again = serve(
            &Request::new(Method::Get, "/ui/api.js").with_header("If-None-Match", &tag),
            i,
            a,
        );
        assert_eq!((again.status, again.body.len()), (304, 0));
        let stale = serve(
            &Request::new(Method::Get, "/ui/api.js").with_header("If-None-Match", "\"old\""),
            i,
            a,
        );
        assert_eq!(stale.status, 200);
        assert!(find("/ui/../page.html").is_none());
        assert!(find("/ui/").is_none());
    }

    /// `GET` (or `HEAD`) `/ui/<name>` with these headers.
    fn ask(method: Method, name: &str, headers: &[(&str, &str)]) -> Response {
        let path = format!("/ui/{name}");
        let (i, a) = find(&path).expect(name);
        let req = headers
            .iter()
            .fold(Request::new(method, &path), |r, (n, v)| r.with_header(n, v));
        serve(&req, i, a)
    }

    fn source(name: &str) -> Vec<u8> {
        let path = format!("{}/src/dashboard/ui/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).expect(&path)
    }

    /// Every text file is stored as a well-formed gzip member of exactly its source, smaller
    /// than it; everything else as it is.
    #[test]
    fn text_is_stored_gzipped_and_inflates_to_its_source() {
        let mut plain_total = 0;
        let mut stored_total = 0;
        for a in ASSETS {
            let source = source(a.name);
            match a.stored {
                Stored::Gzip(member) => {
                    assert_ne!(a.content_type, PNG, "{}", a.name);
                    crate::dashboard::stored::tests::assert_well_formed(member, &source, a.name);
                    assert!(member.len() < source.len(), "{} does not gain", a.name);
                    plain_total += source.len();
                    stored_total += member.len();
                }
                Stored::Plain(bytes) => {
                    assert_eq!(a.content_type, PNG, "{} is stored plain", a.name);
                    assert_eq!(bytes, source, "{}", a.name);
                }
            }
            assert_eq!(a.body(), source, "{}", a.name);
        }
        // About 36 % (51,551 of 142,229 bytes when this was written).
        assert!(
            stored_total * 10 < plain_total * 4,
            "{stored_total} of {plain_total}"
        );
    }

    #[test]
    fn gzip_goes_to_whoever_accepts_it_and_the_file_itself_to_the_rest() {
        for name in ["cards.js", "base.css", "icon.svg", "manifest.webmanifest"] {
            let source = source(name);
            let gzip = ask(
                Method::Get,
                name,
                &[("Accept-Encoding", "gzip, deflate, br")],
            );
            assert_eq!(gzip.status, 200);
            assert_eq!(gzip.header("Content-Encoding"), Some("gzip"), "{name}");
            assert_eq!(gzip.header("Vary"), Some("Accept-Encoding"), "{name}");
            assert_eq!(&gzip.body[..2], &[0x1f, 0x8b], "{name}");
            let inflated =
                miniz_oxide::inflate::decompress_to_vec(&gzip.body[10..gzip.body.len() - 8])
                    .expect("inflates");
            assert_eq!(inflated, source, "{name}");
            for refusing in [
                &[][..],
                &[("Accept-Encoding", "gzip;q=0, deflate")],
                &[("Accept-Encoding", "identity")],
                &[("Accept-Encoding", "*;q=0")],
            ] {
                let plain = ask(Method::Get, name, refusing);
                assert_eq!(plain.status, 200);
                assert_eq!(
                    plain.header("Content-Encoding"),
                    None,
                    "{name} {refusing:?}"
                );
                assert_eq!(plain.header("Vary"), Some("Accept-Encoding"), "{name}");
                assert_eq!(plain.body, source, "{name} {refusing:?}");
                // Everything else is the same in both.
                for header in ["Content-Type", "Cache-Control", "X-Content-Type-Options"] {
                    assert_eq!(plain.header(header), gzip.header(header), "{header}");
                }
                assert_eq!(
                    plain.header("Content-Security-Policy"),
                    Some("default-src 'none'")
                );
            }
        }
        // A PNG is the same for everyone: no encoding, nothing to vary on.
        let png = source("icon-192.png");
        for headers in [&[][..], &[("Accept-Encoding", "gzip")]] {
            let r = ask(Method::Get, "icon-192.png", headers);
            assert_eq!(r.body, png);
            assert_eq!(r.header("Content-Encoding"), None);
            assert_eq!(r.header("Vary"), None);
            assert_eq!(r.header("Content-Type"), Some(PNG));
        }
    }

    /// Two representations, two strong tags: each one's 304 comes only for its own tag.
    #[test]
    fn each_representation_has_its_own_tag_and_304() {
        let gz = [("Accept-Encoding", "gzip")];
        let gzip_tag = ask(Method::Get, "chart.js", &gz)
            .header("ETag")
            .expect("etag")
            .to_string();
        let plain_tag = ask(Method::Get, "chart.js", &[])
            .header("ETag")
            .expect("etag")
            .to_string();
        assert_ne!(gzip_tag, plain_tag);
        for tag in [&gzip_tag, &plain_tag] {
            assert!(
                tag.starts_with('"') && tag.ends_with('"') && tag.len() > 32,
                "{tag}"
            );
        }
        let gzip_304 = ask(
            Method::Get,
            "chart.js",
            &[gz[0], ("If-None-Match", &gzip_tag)],
        );
        assert_eq!((gzip_304.status, gzip_304.body.len()), (304, 0));
        assert_eq!(gzip_304.header("ETag"), Some(gzip_tag.as_str()));
        assert_eq!(gzip_304.header("Vary"), Some("Accept-Encoding"));
        let plain_304 = ask(Method::Get, "chart.js", &[("If-None-Match", &plain_tag)]);
        assert_eq!((plain_304.status, plain_304.body.len()), (304, 0));
        assert_eq!(plain_304.header("ETag"), Some(plain_tag.as_str()));
        // The other representation's tag is not this one's: the whole answer.
        let crossed = ask(
            Method::Get,
            "chart.js",
            &[gz[0], ("If-None-Match", &plain_tag)],
        );
        assert_eq!(crossed.status, 200);
        assert_eq!(crossed.header("Content-Encoding"), Some("gzip"));
        let crossed = ask(Method::Get, "chart.js", &[("If-None-Match", &gzip_tag)]);
        assert_eq!((crossed.status, crossed.body), (200, source("chart.js")));
        // A list holding either tag.
        let both = format!("\"old\", {plain_tag}, {gzip_tag}");
        for headers in [
            &[("If-None-Match", both.as_str())][..],
            &[gz[0], ("If-None-Match", &both)],
        ] {
            assert_eq!(ask(Method::Get, "chart.js", headers).status, 304);
        }
        // Files differ, so do their tags.
        assert_ne!(
            ask(Method::Get, "api.js", &gz).header("ETag"),
            Some(gzip_tag.as_str())
        );
    }

    /// HEAD answers as GET does; the edge sends the head with the body's length and no body.
    #[test]
    fn head_is_answered_as_get() {
        for name in ["settings.js", "favicon-32.png"] {
            for headers in [&[][..], &[("Accept-Encoding", "gzip")]] {
                assert_eq!(
                    ask(Method::Head, name, headers),
                    ask(Method::Get, name, headers),
                    "{name} {headers:?}"
                );
            }
        }
    }

    /// The scripts are classic scripts sharing the page's one global scope: a second top-level
    /// `function f` would silently replace the first, and a second `const` would stop the page.
    #[test]
    fn each_top_level_name_is_declared_by_one_script_only() {
        let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let body = a.body();
            let text = std::str::from_utf8(&body).expect("utf-8");
            for line in text.lines() {
                let rest = line.strip_prefix("async ").unwrap_or(line);
                let name = ["function ", "const ", "let ", "var ", "class "]
                    .iter()
                    .find_map(|k| rest.strip_prefix(k))
                    .map(|r| {
                        r.trim_start_matches('*')
                            .trim_start()
                            .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
                            .next()
                            .unwrap_or("")
                    });
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    if let Some(first) = seen.insert(name.to_string(), a.name) {
                        panic!(
                            "{name} is declared at the top level of {first} and {}",
                            a.name
                        );
                    }
                }
            }
        }
        assert!(seen.contains_key("loadDevices"), "the scan found nothing");
    }
}
