//! The `<!-- example: ... -->` markers of a block.

use crate::common::docs::Block;

/// What a block's `<!-- example: ... -->` markers ask for.
#[derive(Debug, Default)]
pub struct Needs {
    pub illustrative: Option<String>,
    pub fresh: bool,
    pub pairing: bool,
    pub thermostat: bool,
    pub demo: bool,
    pub mqtt: bool,
    pub tls: bool,
    pub lan: bool,
    pub nle_database: bool,
    pub entry_code: Option<String>,
    pub replace: Vec<(String, String)>,
}

pub fn needs(block: &Block) -> Result<Needs, String> {
    let mut needs = Needs::default();
    for marker in &block.markers {
        if let Some(reason) = marker.strip_prefix("illustrative") {
            let reason = reason.trim_start_matches(':').trim();
            if reason.is_empty() {
                return Err("`illustrative` needs a reason: `illustrative: why`".into());
            }
            needs.illustrative = Some(reason.to_string());
        } else if let Some(rest) = marker.strip_prefix("replace ") {
            let (from, to) = rest
                .split_once(" by ")
                .ok_or_else(|| format!("`{marker}`: expected `replace TEXT by SHELL`"))?;
            needs
                .replace
                .push((from.trim().to_string(), to.trim().to_string()));
        } else {
            for word in marker.split_whitespace() {
                match word.split_once('=') {
                    None if word == "fresh" => needs.fresh = true,
                    None if word == "pairing" => needs.pairing = true,
                    None if word == "thermostat" => needs.thermostat = true,
                    None if word == "demo" => needs.demo = true,
                    None if word == "mqtt" => needs.mqtt = true,
                    None if word == "tls" => needs.tls = true,
                    None if word == "lan" => needs.lan = true,
                    None if word == "nle-database" => needs.nle_database = true,
                    Some(("entry-code", code)) => needs.entry_code = Some(code.to_string()),
                    _ => return Err(format!("unknown example marker `{word}`")),
                }
            }
        }
    }
    Ok(needs)
}
