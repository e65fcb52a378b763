//! Outside tools a test needs (curl, actionlint, ...): present, or the test skips with a message,
//! unless its `HEARTH_REQUIRE_...` variable is `1` (as `.ci/run` sets them), which makes a
//! missing tool a failure.

use std::process::Command;

/// Whether `program --version` runs. If not, panics when `require` (a variable name) is `1`,
/// else prints that `what` is skipped and why.
pub fn present(program: &str, require: &str, install: &str, what: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert_ne!(
            std::env::var(require).as_deref(),
            Ok("1"),
            "{program} is not installed ({install})"
        );
        eprintln!("skipped: {program} is not installed, so {what}");
    }
    ok
}
