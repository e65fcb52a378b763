//! Reading README.md and docs/*.md: the pages, their prose and their fenced code blocks (for
//! `tests/it/docs_links.rs` and `tests/it/docs_examples/`).

use std::fs;
use std::path::{Path, PathBuf};

/// The pages: README.md and every Markdown file directly in docs/.
pub fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The fence a line opens or closes (```` ``` ```` or `~~~`), if it is one.
fn fence_marker(line: &str) -> Option<&'static str> {
    let trimmed = line.trim_start();
    ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m))
}

/// The lines of a page outside fenced code blocks, with their line numbers (from 1).
pub fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        match (fence, fence_marker(line)) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// A fenced code block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The line of the opening fence (from 1).
    pub line: usize,
    /// The fence's info string (`sh`, `json`, empty).
    pub info: String,
    /// The text of each `<!-- example: TEXT -->` comment on the lines just before the fence.
    pub markers: Vec<String>,
    /// The lines inside, with their line numbers and the fence's indentation removed.
    pub lines: Vec<(usize, String)>,
}

/// Every fenced code block of a page, in order.
pub fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(marker) = fence_marker(lines[i]) else {
            i += 1;
            continue;
        };
        let indent = lines[i].len() - lines[i].trim_start().len();
        let info = lines[i].trim_start()[marker.len()..].trim().to_string();
        let mut markers = Vec::new();
        for before in lines[..i].iter().rev() {
            let Some(text) = before
                .trim()
                .strip_prefix("<!-- example:")
                .and_then(|t| t.strip_suffix("-->"))
            else {
                break;
            };
            markers.insert(0, text.trim().to_string());
        }
        let start = i;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() && fence_marker(lines[i]) != Some(marker) {
            let line = lines[i];
            let cut = line.len() - line.trim_start().len();
            body.push((i + 1, line[cut.min(indent)..].to_string()));
            i += 1;
        }
        out.push(Block {
            line: start + 1,
            info,
            markers,
            lines: body,
        });
        i += 1;
    }
    out
}
