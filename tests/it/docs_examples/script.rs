//! A block's commands and the output the page shows for each, and how output is compared.

use crate::common::docs::Block;

/// One command of a block, with the output the page shows for it.
#[derive(Debug)]
pub struct Cmd {
    pub line: usize,
    /// The command (continuation lines included), without its trailing comment.
    pub text: String,
    /// The page's output lines (a wrapped line joined), with `...` wildcards. `None`: the
    /// page shows none, so the output is not compared.
    pub expected: Option<Vec<String>>,
    /// Ends with `&`: runs in the background (an event stream).
    pub background: bool,
}

/// Where a line's trailing shell comment starts: a `#` outside quotes at the start of a word.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return Some(i),
            _ => {}
        }
        previous = c;
    }
    None
}

/// The commands of a block. A command is a line that is not a comment, joined with the lines
/// it continues onto (`\`). Comment lines right after it (no blank line between) are its
/// output: `# ` and the output line; a line starting with more than one space after the `#`
/// continues the output line before it (a long line wrapped for the page). A trailing comment
/// starting with `{` or `[` is its output (one line); any other trailing comment, and comment
/// lines after a blank line or at the start of a block, are remarks.
pub fn commands(block: &Block) -> Vec<Cmd> {
    let mut out: Vec<Cmd> = Vec::new();
    let mut collecting = false;
    let mut lines = block.lines.iter();
    while let Some((n, line)) = lines.next() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            collecting = false;
        } else if let Some(comment) = trimmed.strip_prefix('#') {
            if !collecting {
                continue;
            }
            let cmd = out.last_mut().expect("collecting after a command");
            let expected = cmd.expected.get_or_insert_with(Vec::new);
            let text = comment.strip_prefix(' ').unwrap_or(comment);
            match expected.last_mut() {
                Some(last) if text.starts_with(' ') => last.push_str(text.trim_start()),
                _ => expected.push(text.to_string()),
            }
        } else {
            let mut text = String::new();
            let mut last = line.as_str();
            while last.trim_end().ends_with('\\') {
                text.push_str(last);
                text.push('\n');
                match lines.next() {
                    Some((_, next)) => last = next,
                    None => break,
                }
            }
            let (command, remark) = match comment_start(last) {
                Some(at) => (&last[..at], Some(last[at + 1..].trim())),
                None => (last, None),
            };
            text.push_str(command.trim_end());
            let expected = remark
                .filter(|r| r.starts_with('{') || r.starts_with('['))
                .map(|r| vec![r.to_string()]);
            let background = text.ends_with('&') && !text.ends_with("&&");
            if background {
                text.pop();
            }
            out.push(Cmd {
                line: *n,
                text: text.trim_end().to_string(),
                expected,
                background,
            });
            collecting = true;
        }
    }
    out
}

/// One line against a pattern whose `...` matches any run of characters.
pub fn line_matches(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split("...").collect();
    let [first, middle @ .., last] = parts.as_slice() else {
        return pattern == text;
    };
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

/// Lines against patterns: a pattern line `...` matches any number of lines (none too).
pub fn lines_match(patterns: &[String], lines: &[&str]) -> bool {
    match patterns.split_first() {
        None => lines.is_empty(),
        Some((p, rest)) if p == "..." => (0..=lines.len()).any(|k| lines_match(rest, &lines[k..])),
        Some((p, rest)) => {
            !lines.is_empty() && line_matches(p, lines[0]) && lines_match(rest, &lines[1..])
        }
    }
}

/// Whether an answer is a refusal (`{"error":...}`, `"success":false`): a command whose page
/// shows no output must not get one, since curl itself succeeds whatever the status.
pub fn refusal(output: &str) -> bool {
    output.trim_start().starts_with("{\"error\"") || output.contains("\"success\":false")
}
