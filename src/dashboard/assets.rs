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

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("ui/", $name)),
        }
    };
}

/// Every file under `ui/`, in no particular order (page.html sets the order they load in).
pub const ASSETS: &[Asset] = &[
    asset!("base.css", CSS),
    asset!("card.css", CSS),
    asset!("chart.css", CSS),
    asset!("schedule.css", CSS),
    asset!("settings.css", CSS),
    asset!("setup.css", CSS),
    asset!("accounts.css", CSS),
    asset!("api.js", JS),
    asset!("util.js", JS),
    asset!("cards.js", JS),
    asset!("chart.js", JS),
    asset!("schedule.js", JS),
    asset!("settings.js", JS),
    asset!("setup.js", JS),
    asset!("accounts.js", JS),
    asset!("live.js", JS),
    asset!("main.js", JS),
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

    #[test]
    fn every_file_the_page_names_is_served_and_every_served_file_is_named() {
        let page = include_str!("page.html");
        for a in ASSETS {
            assert!(
                page.contains(&format!("\"ui/{}\"", a.name)),
                "page.html does not load {}",
                a.name
            );
            assert!(!a.body.is_empty(), "{} is empty", a.name);
        }
        for (at, _) in page.match_indices("\"ui/") {
            let name = page[at + 4..].split('"').next().unwrap_or("");
            assert!(
                find(&format!("/ui/{name}")).is_some(),
                "page.html loads ui/{name}, which is not served"
            );
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
}
