//! Every shell example in README.md and docs/*.md runs against a server started for it, and
//! its output is compared with what the page shows. The convention (markers, expected output,
//! wildcards, what carries from one block to the next) is written down in docs/development.md,
//! "Examples in the docs are tests"; this directory is its only reader.

use crate::common;
mod markers;
mod mqtt;
mod page;
mod script;
mod shell;

use std::path::Path;

use common::docs::{Block, blocks, pages};
use markers::needs;
use page::run_page;
use script::{commands, line_matches, lines_match};

/// The shell examples: fenced blocks whose info string is `sh`.
fn is_shell(block: &Block) -> bool {
    block.info.split_whitespace().next() == Some("sh")
}

macro_rules! pages {
    ($($test:ident => $page:literal,)*) => {
        $(
            #[test]
            fn $test() {
                run_page($page);
            }
        )*

        /// Every page with a shell example has a test above.
        #[test]
        fn every_page_with_examples_is_run() {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            let listed = [$($page),*];
            for page in pages(root) {
                let text = std::fs::read_to_string(&page).unwrap();
                let name = page.strip_prefix(root).unwrap().display().to_string();
                if blocks(&text).iter().any(is_shell) {
                    assert!(listed.contains(&name.as_str()), "{name} has shell examples but no test in tests/it/docs_examples/main.rs");
                }
            }
        }
    };
}

pages! {
    readme => "README.md",
    configuration => "docs/configuration.md",
    control_api => "docs/control-api.md",
    dashboard => "docs/dashboard.md",
    development => "docs/development.md",
    device_protocol => "docs/device-protocol.md",
    energy => "docs/energy.md",
    homekit => "docs/homekit.md",
    hosted_api => "docs/hosted-api.md",
    metrics => "docs/metrics.md",
    mqtt_home_assistant => "docs/mqtt-home-assistant.md",
    onboarding => "docs/onboarding.md",
    openwrt => "docs/openwrt.md",
    performance => "docs/performance.md",
    presence => "docs/presence.md",
    releasing => "docs/releasing.md",
    running => "docs/running.md",
}

#[test]
fn the_parser_reads_the_convention() {
    let page = "<!-- example: thermostat -->\n```sh\nS=X\ncurl a   # a remark\ncurl b # {\"ok\":true}\ncurl c \\\n  -d 'x # y'\n# {\"a\":1,\n#   \"b\":2}\n# ...\n\n# a remark after a blank line\ncurl -sN d &\n```\n";
    let block = &blocks(page)[0];
    assert!(needs(block).unwrap().thermostat);
    let cmds = commands(block);
    let shown: Vec<(&str, Option<Vec<String>>, bool)> = cmds
        .iter()
        .map(|c| (c.text.as_str(), c.expected.clone(), c.background))
        .collect();
    assert_eq!(
        shown,
        [
            ("S=X", None, false),
            ("curl a", None, false),
            ("curl b", Some(vec!["{\"ok\":true}".to_string()]), false),
            (
                "curl c \\\n  -d 'x # y'",
                Some(vec!["{\"a\":1,\"b\":2}".to_string(), "...".to_string()]),
                false
            ),
            ("curl -sN d", None, true),
        ]
    );
    assert!(line_matches(
        "{\"id\":\"...\",\"n\":1}",
        "{\"id\":\"6c1f\",\"n\":1}"
    ));
    assert!(!line_matches(
        "{\"id\":\"...\",\"n\":1}",
        "{\"id\":\"6c1f\",\"n\":2}"
    ));
    assert!(line_matches("a...b...c", "abc"));
    assert!(!line_matches("a...b", "a"));
    let pats: Vec<String> = ["x", "...", "z"].map(String::from).to_vec();
    assert!(lines_match(&pats, &["x", "y", "y", "z"]));
    assert!(lines_match(&pats, &["x", "z"]));
    assert!(!lines_match(&pats, &["x", "y"]));
}
