//! Plain-text tables for the CLI's listings.

use crate::util::clock;

pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table {
            rows: vec![headers.iter().map(|h| h.to_string()).collect()],
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Columns padded to their widest cell, two spaces apart; no trailing spaces.
    pub fn render(&self) -> String {
        let columns = self.rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                self.rows
                    .iter()
                    .filter_map(|r| r.get(c))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let lines: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let cells: Vec<String> = r
                    .iter()
                    .enumerate()
                    .map(|(c, s)| format!("{s:<width$}", width = widths[c]))
                    .collect();
                cells.join("  ").trim_end().to_string()
            })
            .collect();
        lines.join("\n")
    }
}

/// `2026-11-22 14:03Z` (UTC, to the minute), or `-` for never.
pub fn when(ms: Option<i64>) -> String {
    match ms {
        Some(ms) => {
            let iso = clock::iso8601_ms(ms);
            format!("{} {}Z", &iso[..10], &iso[11..16])
        }
        None => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_columns() {
        let mut t = Table::new(&["A", "LONGER"]);
        t.row(vec!["wide cell".into(), "x".into()]);
        assert_eq!(t.render(), "A          LONGER\nwide cell  x");
        assert_eq!(when(Some(1_766_166_234_000)), "2025-12-19 17:43Z");
        assert_eq!(when(None), "-");
    }
}
