//! Running the `hearth` binary's commands on a data directory, as a person at a shell would.

use std::path::Path;
use std::process::{Command, Output};

/// `hearth ARGS --data-dir DIR`, with the settings a developer's shell might carry that would
/// change the answer removed.
pub fn hearth(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .env_remove("DATA_DIR")
        .env_remove("REQUIRE_DEVICE_PAIRING")
        .env_remove("HOMEKIT")
        .output()
        .expect("the binary runs")
}

/// Its standard output, once it is shown to have succeeded.
pub fn ok(out: &Output) -> String {
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}
