//! Every link and image in README.md and docs/*.md resolves: a relative target names a file
//! that exists, and a `#anchor` names a heading of its target page under GitHub's rules
//! (lowercase; punctuation dropped except `-` and `_`; spaces become `-`; a repeated heading
//! gets `-1`, `-2`, ...). `http(s)://` and `mailto:` links are not followed. Fenced code blocks
//! and code spans are skipped. The test lists every broken link at once.

use crate::common;

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use common::docs::{pages, prose};

/// A line with its code spans (`` `...` ``) removed, so that code is never read as a link.
fn without_code(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        let closing = "`".repeat(ticks);
        match after.find(&closing) {
            Some(end) => {
                out.push_str("code");
                rest = &after[end + ticks..];
            }
            None => {
                out.push_str(&rest[start..start + ticks]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links and images (`[text](target)`, `![alt](target)`) on a line,
/// without an optional `"title"` or the angle brackets of `<target>`.
fn targets(line: &str) -> Vec<String> {
    let line = without_code(line);
    let mut out = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let mut depth = 0usize;
        let mut end = None;
        for (i, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' if depth == 0 => {
                    end = Some(i);
                    break;
                }
                ')' => depth -= 1,
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let mut target = after[..end].trim();
        if let Some((t, _title)) = target.split_once(" \"") {
            target = t.trim();
        }
        let target = target.trim_start_matches('<').trim_end_matches('>');
        out.push(target.to_string());
        rest = &after[end + 1..];
    }
    out
}

/// A heading's anchor under GitHub's rules, before duplicates are numbered.
fn slug(heading: &str) -> String {
    // A link in a heading counts by its text only.
    let mut text = String::new();
    let mut rest = heading;
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .split_once("](")
            .and_then(|(t, a)| Some((t, a.split_once(')')?.1)))
        {
            Some((t, a)) => {
                text.push_str(t);
                rest = a;
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor a page's headings give (ATX headings outside code blocks).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in prose(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let heading = line[hashes..].trim().trim_end_matches('#').trim();
        let base = slug(heading);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

#[test]
fn every_link_in_the_readme_and_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages(root) {
        let text = fs::read_to_string(&page).unwrap();
        let name = page.strip_prefix(root).unwrap().display().to_string();
        let dir = page.parent().unwrap();
        for (n, line) in prose(&text) {
            for target in targets(line) {
                let lower = target.to_ascii_lowercase();
                if lower.starts_with("http://")
                    || lower.starts_with("https://")
                    || lower.starts_with("mailto:")
                {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let file = if path.is_empty() {
                    page.clone()
                } else {
                    dir.join(path)
                };
                if path.starts_with('/') || !file.exists() {
                    broken.push(format!("{name}:{n}: {target}: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if file.extension().is_none_or(|e| e != "md") {
                    broken.push(format!(
                        "{name}:{n}: {target}: an anchor into a non-Markdown file"
                    ));
                    continue;
                }
                let target_text = fs::read_to_string(&file).unwrap();
                if !anchors(&target_text).iter().any(|a| a == anchor) {
                    broken.push(format!("{name}:{n}: {target}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(checked > 0, "no links found: the parser is broken");
    assert!(
        broken.is_empty(),
        "{} broken link(s):\n{}",
        broken.len(),
        broken.join("\n")
    );
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(
        slug("History: `GET /api/history`"),
        "history-get-apihistory"
    );
    assert_eq!(
        slug("Device protocol (port 8000)"),
        "device-protocol-port-8000"
    );
    assert_eq!(slug("Hosted API (`/api/v1`)"), "hosted-api-apiv1");
    assert_eq!(
        slug("Onboarding: scan-network and configure-nest"),
        "onboarding-scan-network-and-configure-nest"
    );
    assert_eq!(
        slug("snake_case and [a link](x.md)"),
        "snake_case-and-a-link"
    );
    assert_eq!(
        anchors("# A\n```\n# not a heading\n```\n## A\n### A"),
        ["a", "a-1", "a-2"]
    );
    assert_eq!(
        targets("see [x](a.md#b), ![img](p.png \"t\"), `[c](d)` and [e](<f g.md>)"),
        ["a.md#b", "p.png", "f g.md"]
    );
}
