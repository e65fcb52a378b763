//! `GET /ui/<name>`: the page's stylesheets, scripts and images, compiled into the binary.
//! Each part of the page is its own small file (`src/dashboard/ui/`), served as it is written:
//! there is no build step. Answers carry an `ETag` and `Cache-Control: no-cache`, so a browser
//! (or the phone's home-screen app) asks again on every load and gets a 304 until hearth is
//! upgraded.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::http::{Request, Response};

/// A file the page loads.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

const CSS: &str = "text/css; charset=utf-8";
const JS: &str = "text/javascript; charset=utf-8";
const PNG: &str = "image/png";
const SVG: &str = "image/svg+xml";
const MANIFEST: &str = "application/manifest+json";

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("ui/", $name)),
        }
    };
}

/// Every file under `ui/`, in no particular order (page.html sets the order they load in). The
/// PNG icons are drawn from `icon.svg` by `scripts/icons.sh`.
pub const ASSETS: &[Asset] = &[
    asset!("base.css", CSS),
    asset!("card.css", CSS),
    asset!("chart.css", CSS),
    asset!("energy.css", CSS),
    asset!("schedule.css", CSS),
    asset!("settings.css", CSS),
    asset!("setup.css", CSS),
    asset!("homekit.css", CSS),
    asset!("accounts.css", CSS),
    asset!("alerts.css", CSS),
    asset!("api.js", JS),
    asset!("util.js", JS),
    asset!("cards.js", JS),
    asset!("chart.js", JS),
    asset!("energy.js", JS),
    asset!("schedule.js", JS),
    asset!("settings.js", JS),
    asset!("setup.js", JS),
    asset!("homekit.js", JS),
    asset!("accounts.js", JS),
    asset!("alerts.js", JS),
    asset!("live.js", JS),
    asset!("main.js", JS),
    asset!("title.js", JS),
    asset!("manifest.webmanifest", MANIFEST),
    asset!("icon.svg", SVG),
    asset!("favicon-32.png", PNG),
    asset!("apple-touch-icon.png", PNG),
    asset!("icon-192.png", PNG),
    asset!("icon-512.png", PNG),
    asset!("icon-maskable-512.png", PNG),
];

/// The asset a `/ui/...` path names, if any.
pub fn find(path: &str) -> Option<(usize, &'static Asset)> {
    let name = path.strip_prefix("/ui/")?;
    ASSETS.iter().enumerate().find(|(_, a)| a.name == name)
}

/// A strong validator per asset: the first 16 bytes of its SHA-256, quoted.
fn etag(index: usize) -> &'static str {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body);
                let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })
    .get(index)
    .map_or("\"\"", String::as_str)
}

pub fn serve(req: &Request, index: usize, asset: &Asset) -> Response {
    let tag = etag(index);
    let headers = vec![
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
    let unchanged = req
        .header("If-None-Match")
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag || t.trim() == "*"));
    Response {
        status: if unchanged { 304 } else { 200 },
        headers,
        body: if unchanged {
            Vec::new()
        } else {
            asset.body.to_vec()
        },
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
            assert!(!a.body.is_empty(), "{} is empty", a.name);
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
            assert_eq!(&a.body[..8], b"\x89PNG\r\n\x1a\n", "{name}");
            assert_eq!(&a.body[12..16], b"IHDR", "{name}");
            let be = |at: usize| {
                u32::from_be_bytes([a.body[at], a.body[at + 1], a.body[at + 2], a.body[at + 3]])
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
            String::from_utf8_lossy(svg.body)
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
            let text = String::from_utf8_lossy(a.body);
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

    /// The scripts are classic scripts sharing the page's one global scope: a second top-level
    /// `function f` would silently replace the first, and a second `const` would stop the page.
    #[test]
    fn each_top_level_name_is_declared_by_one_script_only() {
        let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
        for a in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(a.body).expect("utf-8");
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
