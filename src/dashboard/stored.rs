//! A file of the page as the binary holds it: the text files gzipped at build time (`build.rs`
//! writes one gzip member per file into `OUT_DIR`), the PNGs as they are. A browser that
//! accepts gzip is sent the member itself; anything else gets it inflated here.

use std::borrow::Cow;

/// A page file compiled into the binary.
#[derive(Clone, Copy)]
pub enum Stored {
    /// The file's own bytes (already compressed formats: PNG).
    Plain(&'static [u8]),
    /// One gzip member holding the file, as `build.rs` writes it.
    Gzip(&'static [u8]),
}

/// A text file of `src/dashboard/`, gzipped by `build.rs`.
macro_rules! gzipped {
    ($path:expr) => {
        $crate::dashboard::stored::Stored::Gzip(include_bytes!(concat!(
            env!("OUT_DIR"),
            "/dashboard/",
            $path,
            ".gz"
        )))
    };
}
pub(crate) use gzipped;

impl Stored {
    /// The gzip member, for a client that accepts it; `None` for a file stored plain.
    pub fn gzip(self) -> Option<&'static [u8]> {
        match self {
            Stored::Plain(_) => None,
            Stored::Gzip(member) => Some(member),
        }
    }

    /// The file's own bytes. `None` only if a stored member does not inflate, which a unit
    /// test rules out for every file.
    pub fn plain(self) -> Option<Cow<'static, [u8]>> {
        match self {
            Stored::Plain(bytes) => Some(Cow::Borrowed(bytes)),
            Stored::Gzip(member) => inflate(member).map(Cow::Owned),
        }
    }
}

/// The bytes in a gzip member as `build.rs` writes it: a 10-byte header with no optional
/// fields, raw deflate, then CRC-32 and the length (not checked again here: the member is part
/// of this binary, and the unit tests check both).
fn inflate(member: &[u8]) -> Option<Vec<u8>> {
    let body = member.len().checked_sub(8)?;
    let (head, rest) = member.split_at_checked(10)?;
    let deflate = rest.get(..body.checked_sub(10)?)?;
    if head[..4] != [0x1f, 0x8b, 8, 0] {
        return None;
    }
    let size = u32::from_le_bytes(member.get(body + 4..)?.try_into().ok()?) as usize;
    miniz_oxide::inflate::decompress_to_vec_with_limit(deflate, size)
        .ok()
        .filter(|plain| plain.len() == size)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The check gzip's trailer carries, computed here independently of build.rs's.
    fn crc32(bytes: &[u8]) -> u32 {
        let table: Vec<u32> = (0..256u32)
            .map(|n| {
                (0..8).fold(n, |c, _| {
                    if c & 1 == 1 {
                        0xEDB8_8320 ^ (c >> 1)
                    } else {
                        c >> 1
                    }
                })
            })
            .collect();
        !bytes.iter().fold(!0u32, |c, &b| {
            table[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
        })
    }

    /// A member's header says gzip, no name and no time; its trailer holds the plain file's
    /// CRC-32 and length.
    pub fn assert_well_formed(member: &[u8], plain: &[u8], what: &str) {
        assert_eq!(
            &member[..10],
            &[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255],
            "{what}: header"
        );
        let trailer = &member[member.len() - 8..];
        assert_eq!(&trailer[..4], &crc32(plain).to_le_bytes(), "{what}: CRC-32");
        assert_eq!(
            &trailer[4..],
            &(plain.len() as u32).to_le_bytes(),
            "{what}: length"
        );
    }

    #[test]
    fn the_crc_is_gzips() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn the_shell_inflates_to_page_html() {
        let page = include_bytes!("page.html");
        let stored: Stored = gzipped!("page.html");
        let member = stored.gzip().expect("gzipped");
        assert_well_formed(member, page, "page.html");
        assert_eq!(stored.plain().expect("inflates").as_ref(), page);
        assert!(member.len() < page.len() / 2, "{}", member.len());
    }

    #[test]
    fn a_broken_member_inflates_to_nothing() {
        let member = gzipped!("page.html").gzip().expect("gzipped");
        let mut cut = member.to_vec();
        cut.truncate(member.len() / 2);
        for broken in [&cut[..], &member[..12], &[], &member[1..]] {
            assert!(inflate(broken).is_none());
        }
        // A length in the trailer that is not the length inflated.
        let mut longer = member.to_vec();
        let at = longer.len() - 4;
        longer[at] = longer[at].wrapping_add(1);
        assert!(inflate(&longer).is_none());
        assert_eq!(
            Stored::Plain(b"as it is").plain().as_deref(),
            Some(&b"as it is"[..])
        );
        assert!(Stored::Plain(b"png").gzip().is_none());
    }
}
