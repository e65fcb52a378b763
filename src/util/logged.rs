//! Text from outside hearth as a log line shows it: a thermostat's name, an alert's message, an
//! MQTT topic, a request's path, a weather query. Such text may hold a newline, and a log line
//! that writes it as it is ends there: what follows starts a line of its own, which reads as
//! hearth's (`ERROR hearth::server: ...`). Every log line that writes outside text writes it
//! through [`logged`] (the one place that decides how).

use std::fmt;

/// `text` escaped for a log line (see [`Logged`]).
pub(crate) fn logged(text: &str) -> Logged<'_> {
    Logged(text)
}

/// Outside text that cannot start a log line of its own: control characters (newline,
/// carriage return, tab, escape, the C1 controls such as NEL), Unicode's line and paragraph
/// separators, and the bidirectional overrides (which make a line read otherwise than it is)
/// are written as Rust writes them escaped (`\n`, `\r`, `\u{1b}`, `\u{2028}`); everything
/// else as it is.
pub(crate) struct Logged<'a>(&'a str);

/// Whether `c` is written escaped.
fn escaped(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

impl fmt::Display for Logged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some((at, c)) = rest.char_indices().find(|(_, c)| escaped(*c)) {
            f.write_str(&rest[..at])?;
            write!(f, "{}", c.escape_default())?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::logged;

    #[test]
    fn a_newline_or_carriage_return_cannot_start_a_line() {
        let name = "Hall\nERROR hearth::server: forged line\r\nWARN  x: y\u{85}z\u{2028}w";
        let line = format!("alert 1 started: {} is 5°C", logged(name));
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(!line.contains(['\n', '\r', '\u{85}', '\u{2028}']), "{line}");
        assert_eq!(
            line,
            "alert 1 started: Hall\\nERROR hearth::server: forged line\\r\\nWARN  x: \
             y\\u{85}z\\u{2028}w is 5°C"
        );
    }

    #[test]
    fn other_text_is_kept_as_it_is() {
        for text in ["Hallway", "Séjour ☀ 2", "a \"quoted\" \\ name", ""] {
            assert_eq!(logged(text).to_string(), text);
        }
        assert_eq!(logged("\t\u{1b}[31m").to_string(), "\\t\\u{1b}[31m");
        assert_eq!(logged("a\u{202e}b").to_string(), "a\\u{202e}b");
    }
}
