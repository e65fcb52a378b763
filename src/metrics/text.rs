//! The Prometheus text exposition format, version 0.0.4: a `# HELP` and `# TYPE` line per
//! metric family, then its samples, with label values escaped (`\\`, `\"`, `\n`) since a
//! thermostat's name is the user's free text.

use std::fmt::Write;

use super::HistogramSnapshot;

/// The Content-Type of this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// Starts a metric family; its samples follow. `kind`: `gauge`, `counter` or `histogram`.
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (label, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{label}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", number(value));
    }

    /// A histogram's samples: `_bucket` per bound and `+Inf`, `_sum`, `_count`.
    pub fn histogram(&mut self, name: &str, h: &HistogramSnapshot) {
        let bucket = format!("{name}_bucket");
        for (bound, n) in &h.cumulative {
            self.sample(&bucket, &[("le", &number(*bound))], *n as f64);
        }
        self.sample(&bucket, &[("le", "+Inf")], h.count as f64);
        self.sample(&format!("{name}_sum"), &[], h.sum_seconds);
        self.sample(&format!("{name}_count"), &[], h.count as f64);
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// A label value as the format wants it inside double quotes.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A sample value: Go's spelling of the special values, integers without a fraction.
fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a \"b\" \\ c\nd"), "a \\\"b\\\" \\\\ c\\nd");
        let mut e = Exposition::default();
        e.family("x_info", "gauge", "An info.");
        e.sample("x_info", &[("serial", "S1"), ("name", "Hall \"up\"")], 1.0);
        assert_eq!(
            e.finish(),
            "# HELP x_info An info.\n# TYPE x_info gauge\nx_info{serial=\"S1\",name=\"Hall \\\"up\\\"\"} 1\n"
        );
    }

    #[test]
    fn numbers_are_written_as_prometheus_reads_them() {
        assert_eq!(number(20.5), "20.5");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(0.0005), "0.0005");
    }
}
