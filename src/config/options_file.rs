//! The options file (`OPTIONS_FILE`): a JSON object of settings by name, the way Home
//! Assistant's Supervisor writes an add-on's Configuration page to `/data/options.json`.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::settings::SETTINGS;
use super::sources::{ConfigError, Given};

/// The file's settings by variable; `None` when there is no file (the add-on's image run
/// outside Home Assistant has none, and then the environment alone counts).
pub(super) fn read(path: &Path) -> Result<Option<HashMap<&'static str, String>>, ConfigError> {
    let file_error = |why: String| ConfigError::new("OPTIONS_FILE", &why);
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_error(format!("cannot read {}: {e}", path.display()))),
    };
    let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(&text) else {
        return Err(file_error(format!(
            "{} is not a JSON object of settings",
            path.display()
        )));
    };
    let mut options = HashMap::new();
    for (name, value) in object {
        let Some(setting) = SETTINGS.iter().find(|s| s.name == name) else {
            return Err(file_error(format!(
                "{} has an option hearth does not know: {name:?}",
                path.display()
            )));
        };
        if setting.variable == "OPTIONS_FILE" {
            return Err(file_error(format!(
                "{} cannot name another options file",
                path.display()
            )));
        }
        let text = match value {
            // Unset, as an empty value is: the environment does not show through.
            Value::Null => String::new(),
            Value::Bool(b) => b.to_string(),
            Value::Number(n) => n.to_string(),
            Value::String(s) => s,
            Value::Array(_) | Value::Object(_) => {
                return Err(ConfigError::new(
                    setting.variable,
                    "must be text, a number or true/false, not a list or an object",
                )
                .given(Given::OptionsFile));
            }
        };
        options.insert(setting.variable, text);
    }
    Ok(Some(options))
}
