//! Compresses the dashboard's text files (`src/dashboard/page.html` and the stylesheets,
//! scripts, SVG and manifest under `src/dashboard/ui/`) into gzip members in `OUT_DIR`, which
//! `src/dashboard` compiles into the binary in place of the plain files. The page's authors keep
//! editing the plain files; cargo runs this again whenever one of them changes.
//!
//! The output is the same bytes on every build (release archives are reproducible): no file
//! name, modification time 0, a fixed OS byte, and miniz_oxide's deflate, which is
//! deterministic for a given level. PNGs are left as they are (already compressed).

use std::fs;
use std::path::{Path, PathBuf};

/// Kinds of file that gzip makes smaller; everything else is compiled in as it is.
const COMPRESSED: [&str; 5] = ["html", "css", "js", "svg", "webmanifest"];
/// miniz_oxide's highest level: the smallest output, at a cost paid once per build.
const LEVEL: u8 = 10;

fn main() -> Result<(), String> {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("cargo sets no OUT_DIR")?);
    let dashboard = Path::new("src/dashboard");
    // The directory itself, so an added or removed file counts as a change too.
    println!("cargo:rerun-if-changed=src/dashboard/ui");
    let listed = |e: std::io::Error| format!("src/dashboard/ui: {e}");
    let mut names = fs::read_dir(dashboard.join("ui"))
        .map_err(listed)?
        .map(|entry| entry.map(|e| e.path()).map_err(listed))
        .collect::<Result<Vec<PathBuf>, String>>()?;
    names.sort();
    let mut files = vec![(dashboard.join("page.html"), out.join("dashboard"))];
    files.extend(names.into_iter().map(|p| (p, out.join("dashboard/ui"))));
    for (source, into) in files {
        println!("cargo:rerun-if-changed={}", source.display());
        let text = source
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| COMPRESSED.contains(&e));
        let Some(name) = source.file_name().filter(|_| text) else {
            continue;
        };
        let target = into.join(format!("{}.gz", name.to_string_lossy()));
        let plain = fs::read(&source).map_err(|e| format!("{}: {e}", source.display()))?;
        fs::create_dir_all(&into)
            .and_then(|()| fs::write(&target, gzip(&plain)))
            .map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(())
}

/// One gzip member (RFC 1952) holding `plain`.
fn gzip(plain: &[u8]) -> Vec<u8> {
    // ID1 ID2, CM = deflate, FLG = none (no name, no comment), MTIME = 0, XFL = 2 (slowest,
    // smallest), OS = 255 (unknown: the same whichever machine builds it).
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255];
    out.extend(miniz_oxide::deflate::compress_to_vec(plain, LEVEL));
    out.extend(crc32(plain).to_le_bytes());
    // ISIZE: the length modulo 2^32, as RFC 1952 has it.
    out.extend((plain.len() as u32).to_le_bytes());
    out
}

/// The CRC-32 gzip's trailer carries (IEEE 802.3, reflected, polynomial 0xEDB88320).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}
