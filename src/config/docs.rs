//! The settings' documentation, from their declarations ([`super::settings::SETTINGS`]): the
//! table in docs/configuration.md and each option's `--help` line.

use super::settings::{Kind, Setting, Unset};

/// The settings table of docs/configuration.md (Markdown), one row per declared setting.
#[cfg(test)]
fn settings_table() -> String {
    let mut out = String::from(
        "| Variable | Option | Default | Allowed | What it does |\n|---|---|---|---|---|\n",
    );
    for s in super::settings::SETTINGS {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} |\n",
            s.variable,
            s.option,
            default(s),
            allowed(s),
            s.help
        ));
    }
    out
}

/// An option's description for `--help`: what it does (`meaning`: the declared help, or what
/// the setting is for in another command), its variable, allowed values and default.
pub fn help_line(s: &Setting, meaning: &str) -> String {
    plain(&format!(
        "{meaning} ({}; {}; default: {})",
        s.variable,
        allowed(s),
        default(s)
    ))
}

/// What a setting accepts (Markdown).
fn allowed(s: &Setting) -> String {
    match s.kind {
        Kind::Number { min, max, .. } => format!("{min}–{max}"),
        Kind::Bool { .. } => "`true`/`false`, `1`/`0`, `yes`/`no` or `on`/`off`".to_string(),
        Kind::Ip { .. } => "an IP address".to_string(),
        Kind::Text { allowed, .. } => allowed.to_string(),
    }
}

/// What a setting is when unset (Markdown): its value in code style, or what happens instead.
fn default(s: &Setting) -> String {
    match s.kind {
        Kind::Number { default, .. } => format!("`{default}`"),
        Kind::Bool { default } => format!("`{default}`"),
        Kind::Ip {
            unset: Unset::Is(ip),
        } => format!("`{ip}`"),
        Kind::Text {
            unset: Unset::Is(value),
            ..
        } => format!("`{value}`"),
        Kind::Ip {
            unset: Unset::Means(what),
        }
        | Kind::Text {
            unset: Unset::Means(what),
            ..
        } => what.to_string(),
    }
}

/// Markdown as a terminal shows it: no backticks, and a link's text without its target.
fn plain(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut rest = markdown;
    while let Some(c) = rest.chars().next() {
        if c == '[' {
            if let Some((text, after)) = link(rest) {
                out.push_str(text);
                rest = after;
                continue;
            }
        }
        if c != '`' {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `[text](target)` at the start of `s`: the text, and what follows the link.
fn link(s: &str) -> Option<(&str, &str)> {
    let (text, after) = s.strip_prefix('[')?.split_once("](")?;
    let (_, after) = after.split_once(')')?;
    Some((text, after))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::SETTINGS;
    use std::path::Path;

    /// The table in docs/configuration.md sits between these lines.
    const START: &str = "<!-- settings table: generated from src/config/settings.rs; \
                         HEARTH_BLESS=1 cargo test --lib settings_table rewrites it -->\n";
    const END: &str = "<!-- end of settings table -->\n";

    /// Fails when docs/configuration.md's table is not what the declarations say; with
    /// `HEARTH_BLESS=1` it rewrites the table instead.
    #[test]
    fn settings_table_matches_the_declarations() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/configuration.md");
        let page = std::fs::read_to_string(&path).unwrap();
        let (before, rest) = page.split_once(START).expect("the page's start marker");
        let (table, after) = rest.split_once(END).expect("the page's end marker");
        let wanted = settings_table();
        if table == wanted {
            return;
        }
        if std::env::var("HEARTH_BLESS").as_deref() == Ok("1") {
            std::fs::write(&path, format!("{before}{START}{wanted}{END}{after}")).unwrap();
            return;
        }
        panic!(
            "docs/configuration.md's settings table differs from src/config/settings.rs; \
             `HEARTH_BLESS=1 cargo test --lib settings_table` rewrites it. Wanted:\n{wanted}"
        );
    }

    #[test]
    fn help_lines_are_plain_text() {
        let s = &SETTINGS[0];
        assert_eq!(
            help_line(s, "see [HTTPS](#https) and `x`"),
            "see HTTPS and x (DATA_DIR; a directory; default: ./data)"
        );
        assert_eq!(plain("a [b] c [d](e"), "a [b] c [d](e");
    }
}
