//! Legacy paths to their `/nest/...` form. Authentication runs after this, so legacy paths get
//! exactly the same pairing checks (the Python server skips them: a bug we do not copy).

/// The `/nest/...` path a request is served as. The query string is not part of `path`.
pub fn normalize(path: &str) -> String {
    if path == "/nest" || path.starts_with("/nest/") {
        return path.to_string();
    }
    for (exact, to) in [
        ("/entry", "/nest/entry"),
        ("/ping", "/nest/ping"),
        ("/passphrase", "/nest/passphrase"),
        ("/passphrase/status", "/nest/passphrase/status"),
        ("/upload", "/nest/upload"),
    ] {
        if path == exact || path.strip_suffix('/') == Some(exact) {
            return to.to_string();
        }
    }
    if let Some(rest) = path.strip_prefix("/czfe/") {
        return format!("/nest/transport/{rest}");
    }
    if path == "/transport" {
        return "/nest/transport/".to_string();
    }
    for (prefix, to) in [
        ("/transport/", "/nest/transport/"),
        ("/weather/", "/nest/weather/"),
        ("/pro_info/", "/nest/pro_info/"),
    ] {
        if let Some(rest) = path.strip_prefix(prefix) {
            return format!("{to}{rest}");
        }
    }
    path.to_string()
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn rewrites_legacy_paths() {
        let cases = [
            ("/nest/transport/v7/put", "/nest/transport/v7/put"),
            ("/entry", "/nest/entry"),
            ("/entry/", "/nest/entry"),
            ("/ping/", "/nest/ping"),
            ("/passphrase", "/nest/passphrase"),
            ("/czfe/v5/subscribe", "/nest/transport/v5/subscribe"),
            ("/czfe/v5/put", "/nest/transport/v5/put"),
            ("/transport/v5/subscribe", "/nest/transport/v5/subscribe"),
            ("/transport", "/nest/transport/"),
            ("/transport/", "/nest/transport/"),
            ("/weather/v1", "/nest/weather/v1"),
            ("/weather/forecast", "/nest/weather/forecast"),
            ("/upload", "/nest/upload"),
            ("/upload/", "/nest/upload"),
            ("/pro_info/device123", "/nest/pro_info/device123"),
        ];
        for (from, to) in cases {
            assert_eq!(normalize(from), to, "{from}");
        }
        for unchanged in [
            "/info",
            "/health",
            "/",
            "/api/v1/status",
            "/control/x",
            "/czfe",
            "/transporter",
        ] {
            assert_eq!(normalize(unchanged), unchanged);
        }
    }
}
