//! The command line of `hearth serve`, `scan` and `point`, whose options are declared settings
//! ([`crate::config::settings`]). argh's derive wants a struct field and a doc comment per
//! option; these commands are parsed and described from the declarations instead, by hand,
//! with argh's messages and help layout.

use argh::{CommandInfo, EarlyExit};

use crate::config::Sources;
use crate::config::docs::help_line;
use crate::config::settings::{SETTINGS, Setting};

/// A command: its argh name and description, what it takes besides settings, and which settings.
pub struct Spec {
    pub command: CommandInfo,
    /// Required positional arguments: name and description.
    pub positionals: &'static [(&'static str, &'static str)],
    /// Options that are not settings: name (with dashes) and description.
    pub options: &'static [(&'static str, &'static str)],
    pub settings: Takes,
}

/// The settings a command takes as options.
pub enum Takes {
    /// Every setting, described as declared.
    All,
    /// These, each with what it is for in this command.
    These(&'static [(&'static Setting, &'static str)]),
}

/// A parsed command line.
pub struct Parsed {
    pub positionals: Vec<String>,
    /// The non-setting options given, by name.
    pub options: Vec<(&'static str, String)>,
    /// The settings given, by variable.
    pub settings: Vec<(&'static str, String)>,
}

impl Parsed {
    /// The value of the non-setting option `name`.
    pub fn option(&mut self, name: &str) -> Option<String> {
        let at = self.options.iter().position(|(n, _)| *n == name)?;
        Some(self.options.swap_remove(at).1)
    }

    /// The settings given, over the environment `env`.
    pub fn sources(self, env: &dyn Fn(&str) -> Option<String>) -> Sources<'_> {
        let mut sources = Sources::new(env);
        for (variable, value) in self.settings {
            sources.flag(variable, Some(value));
        }
        sources
    }
}

const HELP_TRIGGERS: [&str; 2] = ["--help", "help"];

impl Spec {
    /// Parses `args` as argh would: options anywhere, each once, `--` ends them, `--help` or
    /// `help` prints the description (to stdout, exit 0).
    pub fn parse(&self, command: &[&str], args: &[&str]) -> Result<Parsed, EarlyExit> {
        let mut parsed = Parsed {
            positionals: Vec::new(),
            options: Vec::new(),
            settings: Vec::new(),
        };
        let (mut help, mut options_ended) = (false, false);
        let mut rest = args.iter();
        while let Some(&arg) = rest.next() {
            if !options_ended && HELP_TRIGGERS.contains(&arg) {
                help = true;
            } else if !options_ended && arg == "--" {
                options_ended = true;
            } else if !options_ended && arg.starts_with('-') {
                if help {
                    return Err("Trailing arguments are not allowed after `help`."
                        .to_string()
                        .into());
                }
                self.record(&mut parsed, arg, rest.next().copied())?;
            } else if parsed.positionals.len() < self.positionals.len() {
                parsed.positionals.push(arg.to_string());
            } else {
                return Err(format!("Unrecognized argument: {arg}\n").into());
            }
        }
        if help {
            return Err(EarlyExit {
                output: self.help(command),
                status: Ok(()),
            });
        }
        if let Some((name, _)) = self.positionals.get(parsed.positionals.len()) {
            return Err(
                format!("Required positional arguments not provided:\n    {name}\n").into(),
            );
        }
        Ok(parsed)
    }

    /// Files `--option value` under its setting's variable or its own name.
    fn record(&self, parsed: &mut Parsed, option: &str, value: Option<&str>) -> Result<(), String> {
        let settings = self.settings();
        let (key, given) = if let Some((s, _)) = settings.iter().find(|(s, _)| s.option == option) {
            (s.variable, &mut parsed.settings)
        } else if let Some((name, _)) = self.options.iter().find(|(n, _)| *n == option) {
            (*name, &mut parsed.options)
        } else {
            return Err(format!("Unrecognized argument: {option}\n"));
        };
        let value = value.ok_or_else(|| format!("No value provided for option '{option}'.\n"))?;
        if given.iter().any(|(k, _)| *k == key) {
            return Err(format!(
                "Error parsing option '{option}' with value '{value}': duplicate values provided\n"
            ));
        }
        given.push((key, value.to_string()));
        Ok(())
    }

    /// The settings this command takes, each with what it is for here.
    fn settings(&self) -> Vec<(&'static Setting, &'static str)> {
        match self.settings {
            Takes::All => SETTINGS.iter().map(|s| (s, s.help)).collect(),
            Takes::These(these) => these.to_vec(),
        }
    }

    /// argh's layout: usage, description, positional arguments, options.
    fn help(&self, command: &[&str]) -> String {
        let options: Vec<(&str, String)> = (self.options.iter())
            .map(|(name, help)| (*name, help.to_string()))
            .chain(
                self.settings()
                    .into_iter()
                    .map(|(s, meaning)| (s.option, help_line(s, meaning))),
            )
            .collect();
        let mut out = format!("Usage: {}", command.join(" "));
        for (name, _) in &options {
            out.push_str(&format!(" [{name} <{}>]", name.trim_start_matches('-')));
        }
        if !self.positionals.is_empty() {
            out.push_str(" [--]");
        }
        for (name, _) in self.positionals {
            out.push_str(&format!(" <{name}>"));
        }
        out.push_str(&format!("\n\n{}\n", self.command.description));
        if !self.positionals.is_empty() {
            out.push_str("\nPositional Arguments:\n");
            for (name, help) in self.positionals {
                describe(&mut out, name, help);
            }
        }
        out.push_str("\nOptions:\n");
        for (name, help) in &options {
            describe(&mut out, name, help);
        }
        describe(
            &mut out,
            &HELP_TRIGGERS.join(", "),
            "display usage information",
        );
        out
    }
}

/// Where descriptions start, and the width they wrap at (argh's).
const DESCRIPTION_COLUMN: usize = 20;
const WIDTH: usize = 80;

/// One name and its description, wrapped as argh does: after the name, or on the next line
/// when the name reaches the description column.
fn describe(out: &mut String, name: &str, description: &str) {
    let mut line = format!("  {name}");
    if line.chars().count() >= DESCRIPTION_COLUMN {
        out.push_str(&line);
        out.push('\n');
        line.clear();
    }
    for word in description.split(' ') {
        let len = line.chars().count();
        if len > DESCRIPTION_COLUMN && len + 1 + word.chars().count() > WIDTH {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        let len = line.chars().count();
        if len < DESCRIPTION_COLUMN {
            line.push_str(&" ".repeat(DESCRIPTION_COLUMN - len));
        } else {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::settings::text;

    // A separate constant: a borrow inside `Takes::These(…)` would not live long enough.
    const DATA_HERE: &[(&Setting, &str)] = &[(text("DATA_DIR").setting, "data here")];
    const SPEC: Spec = Spec {
        command: CommandInfo {
            name: "try",
            short: &'\0',
            description: "try it",
        },
        positionals: &[("ip", "an address")],
        options: &[("--key", "a key")],
        settings: Takes::These(DATA_HERE),
    };

    #[test]
    fn parses_settings_options_and_positionals() {
        let mut p = SPEC
            .parse(
                &["hearth", "try"],
                &["--data-dir", "d", "1.2.3.4", "--key", "k"],
            )
            .unwrap();
        assert_eq!(p.positionals, ["1.2.3.4"]);
        assert_eq!(p.option("--key").as_deref(), Some("k"));
        assert_eq!(p.settings, [("DATA_DIR", "d".to_string())]);
    }

    #[test]
    fn refuses_as_argh_does() {
        let err = |args: &[&str]| SPEC.parse(&["hearth", "try"], args).err().unwrap();
        assert_eq!(
            err(&["--bind", "x", "ip"]).output,
            "Unrecognized argument: --bind\n"
        );
        assert_eq!(
            err(&["ip", "--key"]).output,
            "No value provided for option '--key'.\n"
        );
        assert!(
            err(&["ip", "--key", "a", "--key", "b"])
                .output
                .contains("duplicate")
        );
        assert!(err(&[]).output.contains("Required positional arguments"));
        assert_eq!(err(&["a", "b"]).output, "Unrecognized argument: b\n");
        let help = err(&["--help"]);
        assert_eq!(help.status, Ok(()));
        assert!(help.output.starts_with(
            "Usage: hearth try [--key <key>] [--data-dir <data-dir>] [--] <ip>\n\ntry it\n"
        ));
        assert!(
            help.output.contains(
                "  --data-dir        data here (DATA_DIR; a directory; default: ./data)\n"
            )
        );
    }

    #[test]
    fn wraps_like_argh() {
        let mut out = String::new();
        describe(&mut out, "--a-very-long-option-name", &"word ".repeat(20));
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "  --a-very-long-option-name");
        assert!(lines[1].starts_with(&format!("{}word", " ".repeat(20))));
        assert!(lines.iter().all(|l| l.chars().count() <= 80));
    }
}
