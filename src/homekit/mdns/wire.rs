//! DNS messages as multicast DNS carries them (RFC 1035 §4, RFC 6762 §18): read from whatever
//! arrives on port 5353, and written for hearth's own answers.
//!
//! Reading is bounded, since anyone on the network can send anything: a packet of at most
//! [`MAX_PACKET`] bytes with at most [`MAX_QUESTIONS`] questions and [`MAX_RECORDS`] records;
//! names of at most 255 bytes, labels of at most 63; compression pointers that point only
//! backwards, before the part of the name that holds them (so following them always ends), and
//! at most [`MAX_POINTERS`] in one name. Anything else is an [`Error`] that says what was wrong
//! and where. Names inside the records hearth compares (PTR, SRV, NSEC, CNAME, NS) are read
//! uncompressed, so a record compares equal however it was compressed.

use std::fmt;

/// The largest packet read (RFC 6762 §17: a multicast DNS packet, its headers included, is at
/// most 9,000 bytes); the receive buffer's size.
pub const MAX_PACKET: usize = 9000;
/// Questions one packet may hold.
pub const MAX_QUESTIONS: usize = 64;
/// Records (answers, authority and additional together) one packet may hold. A packet of the
/// usual 1,500 bytes has room for about 120.
pub const MAX_RECORDS: usize = 256;
/// Compression pointers followed in one name.
pub const MAX_POINTERS: usize = 32;
/// A name's length on the wire, uncompressed, its length bytes and final zero included.
const MAX_NAME: usize = 255;

/// Record and question types hearth knows.
pub const A: u16 = 1;
pub const NS: u16 = 2;
pub const CNAME: u16 = 5;
pub const PTR: u16 = 12;
pub const TXT: u16 = 16;
pub const AAAA: u16 = 28;
pub const SRV: u16 = 33;
pub const NSEC: u16 = 47;
pub const ANY: u16 = 255;
/// The Internet class.
pub const IN: u16 = 1;
/// The top bit of a class: in a question, "unicast response wanted" (QU, RFC 6762 §5.4); in a
/// record, "cache flush" (§10.2).
pub const TOP_BIT: u16 = 0x8000;

/// The header's flags.
pub const RESPONSE: u16 = 0x8000;
pub const AUTHORITATIVE: u16 = 0x0400;
pub const TRUNCATED: u16 = 0x0200;

/// A domain name, uncompressed, as on the wire: each label after its length, then a zero.
/// Compared as DNS compares names: ASCII letters in either case are the same.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Name(Vec<u8>);

impl Name {
    /// The name of these labels, or `None` if one is empty or over 63 bytes, or the name over
    /// 255 bytes.
    pub fn new(labels: &[&str]) -> Option<Name> {
        let mut bytes = Vec::new();
        for label in labels {
            let len = u8::try_from(label.len())
                .ok()
                .filter(|l| (1..=63).contains(l))?;
            bytes.push(len);
            bytes.extend_from_slice(label.as_bytes());
        }
        bytes.push(0);
        (bytes.len() <= MAX_NAME).then_some(Name(bytes))
    }

    /// The root name (no labels).
    pub fn root() -> Name {
        Name(vec![0])
    }

    /// Its wire form, uncompressed.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its labels, in order.
    pub fn labels(&self) -> Labels<'_> {
        Labels(&self.0)
    }

    /// Whether `other` is the same name (ASCII case ignored).
    pub fn same(&self, other: &Name) -> bool {
        self.0.eq_ignore_ascii_case(&other.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Dotted, each label as text (bytes that are not UTF-8 replaced). Outside text: a log line
/// writes it through [`crate::util::logged`].
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for label in self.labels() {
            write!(f, "{}.", String::from_utf8_lossy(label))?;
        }
        Ok(())
    }
}

/// The labels of a [`Name`].
pub struct Labels<'a>(&'a [u8]);

impl<'a> Iterator for Labels<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (&len, rest) = self.0.split_first()?;
        let label = rest.get(..usize::from(len)).filter(|_| len > 0)?;
        self.0 = rest.get(usize::from(len)..).unwrap_or_default();
        Some(label)
    }
}

/// A question: a name, a type and a class (with its QU bit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    pub name: Name,
    pub qtype: u16,
    /// As sent: the QU bit included.
    pub qclass: u16,
}

impl Question {
    /// Whether the querier asks for a unicast answer (QU).
    pub fn unicast_response(&self) -> bool {
        self.qclass & TOP_BIT != 0
    }

    /// The class without the QU bit.
    pub fn class(&self) -> u16 {
        self.qclass & !TOP_BIT
    }
}

/// A resource record. `data` holds the names inside PTR, SRV, NSEC, CNAME and NS data
/// uncompressed; any other type's data as it came.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub name: Name,
    pub rtype: u16,
    /// As sent: the cache-flush bit included.
    pub rclass: u16,
    pub ttl: u32,
    pub data: Vec<u8>,
}

impl Record {
    /// The class without the cache-flush bit.
    pub fn class(&self) -> u16 {
        self.rclass & !TOP_BIT
    }

    /// Whether `other` holds the same data: of the same type, its names equal but for ASCII
    /// case, every other byte equal.
    pub fn same_data(&self, other: &Record) -> bool {
        if self.rtype != other.rtype {
            return false;
        }
        let (a, b) = (self.data.as_slice(), other.data.as_slice());
        match self.rtype {
            PTR | CNAME | NS => a.eq_ignore_ascii_case(b),
            SRV => match (a.split_at_checked(6), b.split_at_checked(6)) {
                (Some((fa, na)), Some((fb, nb))) => fa == fb && na.eq_ignore_ascii_case(nb),
                _ => a == b,
            },
            NSEC => {
                let (na, ra) = a.split_at(name_len(a).min(a.len()));
                let (nb, rb) = b.split_at(name_len(b).min(b.len()));
                na.eq_ignore_ascii_case(nb) && ra == rb
            }
            _ => a == b,
        }
    }
}

/// The length of the uncompressed name at the start of `bytes` (all of them if it has no end).
fn name_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(&len) = bytes.get(at) {
        at += 1 + usize::from(len);
        if len == 0 {
            return at;
        }
    }
    bytes.len()
}

/// A DNS message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub id: u16,
    pub flags: u16,
    pub questions: Vec<Question>,
    pub answers: Vec<Record>,
    pub authority: Vec<Record>,
    pub additional: Vec<Record>,
}

impl Message {
    /// A response, not a query.
    pub fn is_response(&self) -> bool {
        self.flags & RESPONSE != 0
    }

    /// Whether more known answers follow in further packets (TC in a query, RFC 6762 §7.2).
    pub fn truncated(&self) -> bool {
        self.flags & TRUNCATED != 0
    }

    /// The operation code: multicast DNS is 0 (a standard query); others are ignored.
    pub fn opcode(&self) -> u16 {
        (self.flags >> 11) & 0xF
    }

    /// The response code: multicast DNS messages carrying another than 0 are ignored.
    pub fn rcode(&self) -> u16 {
        self.flags & 0xF
    }

    /// The records of every section, in order.
    pub fn records(&self) -> impl Iterator<Item = &Record> {
        self.answers
            .iter()
            .chain(&self.authority)
            .chain(&self.additional)
    }

    /// Reads a message from `packet`.
    pub fn parse(packet: &[u8]) -> Result<Message, Error> {
        if packet.len() > MAX_PACKET {
            return Err(Error::TooLong(packet.len()));
        }
        let mut r = Reader { packet, at: 0 };
        let id = r.u16("the header")?;
        let flags = r.u16("the header")?;
        let counts = [
            r.u16("the header")?,
            r.u16("the header")?,
            r.u16("the header")?,
            r.u16("the header")?,
        ]
        .map(usize::from);
        let records = counts[1] + counts[2] + counts[3];
        if counts[0] > MAX_QUESTIONS || records > MAX_RECORDS {
            return Err(Error::Counts {
                questions: counts[0],
                records,
            });
        }
        let mut message = Message {
            id,
            flags,
            ..Message::default()
        };
        for _ in 0..counts[0] {
            let name = r.name()?;
            let qtype = r.u16("a question")?;
            let qclass = r.u16("a question")?;
            message.questions.push(Question {
                name,
                qtype,
                qclass,
            });
        }
        for (section, count) in [1, 2, 3].into_iter().zip(&counts[1..]) {
            for _ in 0..*count {
                let record = r.record()?;
                match section {
                    1 => message.answers.push(record),
                    2 => message.authority.push(record),
                    _ => message.additional.push(record),
                }
            }
        }
        // Bytes after the last record are ignored, as resolvers do.
        Ok(message)
    }

    /// The message as sent: names compressed (in the PTR and SRV data too, RFC 6762 §18.14),
    /// except an NSEC's.
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer {
            buf: Vec::with_capacity(512),
            written: Vec::new(),
        };
        w.u16(self.id);
        w.u16(self.flags);
        for count in [
            self.questions.len(),
            self.answers.len(),
            self.authority.len(),
            self.additional.len(),
        ] {
            w.u16(u16::try_from(count).unwrap_or(u16::MAX));
        }
        for q in &self.questions {
            w.name(&q.name);
            w.u16(q.qtype);
            w.u16(q.qclass);
        }
        for record in self.records() {
            w.record(record);
        }
        w.buf
    }
}

/// Why a packet could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// Longer than [`MAX_PACKET`].
    TooLong(usize),
    /// It ends inside something.
    Short { at: usize, what: &'static str },
    /// More questions or records than the limits.
    Counts { questions: usize, records: usize },
    /// A label of the reserved kinds (its length's top bits 01 or 10).
    Label { at: usize },
    /// A compression pointer that does not point before the part of the name holding it.
    Pointer { at: usize, to: usize },
    /// More than [`MAX_POINTERS`] pointers in one name.
    Pointers { at: usize },
    /// A name over 255 bytes.
    NameLength { at: usize },
    /// The data of a record whose names hearth reads does not hold what its type says.
    Data { at: usize, rtype: u16 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::TooLong(n) => write!(f, "{n} bytes, over the {MAX_PACKET} a packet may have"),
            Error::Short { at, what } => write!(f, "it ends inside {what} (byte {at})"),
            Error::Counts { questions, records } => write!(
                f,
                "{questions} questions and {records} records, over the {MAX_QUESTIONS} and \
                 {MAX_RECORDS} read"
            ),
            Error::Label { at } => write!(f, "a label of a reserved kind at byte {at}"),
            Error::Pointer { at, to } => write!(
                f,
                "a compression pointer at byte {at} to byte {to}, not before the name holding it"
            ),
            Error::Pointers { at } => {
                write!(
                    f,
                    "more than {MAX_POINTERS} compression pointers in the name at byte {at}"
                )
            }
            Error::NameLength { at } => write!(f, "a name over 255 bytes at byte {at}"),
            Error::Data { at, rtype } => {
                write!(
                    f,
                    "the data of a record of type {rtype} at byte {at} is malformed"
                )
            }
        }
    }
}

struct Reader<'a> {
    packet: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Error> {
        let at = self.at;
        let packet = self.packet;
        let bytes = at
            .checked_add(n)
            .and_then(|end| packet.get(at..end))
            .ok_or(Error::Short { at, what })?;
        self.at += n;
        Ok(bytes)
    }

    fn u16(&mut self, what: &'static str) -> Result<u16, Error> {
        let b = self.bytes(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u32(&mut self, what: &'static str) -> Result<u32, Error> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn name(&mut self) -> Result<Name, Error> {
        let (name, end) = read_name(self.packet, self.at)?;
        self.at = end;
        Ok(name)
    }

    fn record(&mut self) -> Result<Record, Error> {
        let name = self.name()?;
        let rtype = self.u16("a record")?;
        let rclass = self.u16("a record")?;
        let ttl = self.u32("a record")?;
        let len = usize::from(self.u16("a record")?);
        let start = self.at;
        let raw = self.bytes(len, "a record's data")?;
        let malformed = Error::Data { at: start, rtype };
        let data = match rtype {
            PTR | CNAME | NS => {
                let (target, end) = read_name(self.packet, start)?;
                if end != start + len {
                    return Err(malformed);
                }
                target.0
            }
            SRV => {
                let fixed = raw.get(..6).ok_or(malformed.clone())?.to_vec();
                let (target, end) = read_name(self.packet, start + 6)?;
                if end != start + len {
                    return Err(malformed);
                }
                [fixed, target.0].concat()
            }
            NSEC => {
                let (next, end) = read_name(self.packet, start)?;
                let rest = end
                    .checked_sub(start)
                    .and_then(|used| raw.get(used..))
                    .ok_or(malformed)?;
                [next.0, rest.to_vec()].concat()
            }
            _ => raw.to_vec(),
        };
        Ok(Record {
            name,
            rtype,
            rclass,
            ttl,
            data,
        })
    }
}

/// The name at `start` of `packet`, uncompressed, and where the bytes after it begin (after its
/// first pointer, if it has one). Each pointer must point before the run of labels that holds
/// it, so the runs followed start ever earlier and reading ends.
fn read_name(packet: &[u8], start: usize) -> Result<(Name, usize), Error> {
    let mut out = Vec::with_capacity(32);
    let mut at = start;
    // Where the run of labels being read began.
    let mut run = start;
    let mut end = None;
    let mut pointers = 0;
    loop {
        let short = Error::Short { at, what: "a name" };
        let len = *packet.get(at).ok_or(short.clone())?;
        match len & 0xC0 {
            0x00 if len == 0 => {
                out.push(0);
                return Ok((Name(out), end.unwrap_or(at + 1)));
            }
            0x00 => {
                let n = usize::from(len);
                let label = packet.get(at + 1..at + 1 + n).ok_or(short)?;
                // This label, and at least the final zero after it.
                if out.len() + 1 + n + 1 > MAX_NAME {
                    return Err(Error::NameLength { at: start });
                }
                out.push(len);
                out.extend_from_slice(label);
                at += 1 + n;
            }
            0xC0 => {
                let low = *packet.get(at + 1).ok_or(short)?;
                let to = usize::from(len & 0x3F) << 8 | usize::from(low);
                if to >= run {
                    return Err(Error::Pointer { at, to });
                }
                pointers += 1;
                if pointers > MAX_POINTERS {
                    return Err(Error::Pointers { at: start });
                }
                end.get_or_insert(at + 2);
                at = to;
                run = to;
            }
            _ => return Err(Error::Label { at }),
        }
    }
}

/// Writes a message, compressing names against those already written.
struct Writer {
    buf: Vec<u8>,
    /// Where each name (or tail of a name) written in full begins, and its bytes.
    written: Vec<(usize, Vec<u8>)>,
}

impl Writer {
    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_be_bytes());
    }

    /// `name`: its labels up to a tail already written (byte for byte, so a name reads back in
    /// its own case), then a pointer to that tail.
    fn name(&mut self, name: &Name) {
        self.name_bytes(name.as_bytes(), true);
    }

    fn name_bytes(&mut self, bytes: &[u8], compress: bool) {
        let mut at = 0;
        while let Some(&len) = bytes.get(at) {
            let tail = &bytes[at..];
            if len == 0 {
                self.buf.push(0);
                return;
            }
            if compress {
                let earlier = self
                    .written
                    .iter()
                    .find(|(_, t)| t == tail)
                    .map(|(offset, _)| *offset);
                if let Some(offset) = earlier {
                    // Offsets below 0x4000 only are remembered.
                    self.u16(0xC000 | offset as u16);
                    return;
                }
                if self.buf.len() < 0x4000 {
                    self.written.push((self.buf.len(), tail.to_vec()));
                }
            }
            let end = (at + 1 + usize::from(len)).min(bytes.len());
            self.buf.extend_from_slice(&bytes[at..end]);
            at = end;
        }
        // A name always ends with its zero; bytes that do not are ended here.
        self.buf.push(0);
    }

    fn record(&mut self, r: &Record) {
        self.name(&r.name);
        self.u16(r.rtype);
        self.u16(r.rclass);
        self.buf.extend_from_slice(&r.ttl.to_be_bytes());
        let length_at = self.buf.len();
        self.u16(0);
        let start = self.buf.len();
        match r.rtype {
            PTR | CNAME | NS => self.name_bytes(&r.data, true),
            SRV if r.data.len() > 6 => {
                self.buf.extend_from_slice(&r.data[..6]);
                self.name_bytes(&r.data[6..], true);
            }
            NSEC => {
                let n = name_len(&r.data);
                self.name_bytes(&r.data[..n], false);
                self.buf.extend_from_slice(&r.data[n..]);
            }
            _ => self.buf.extend_from_slice(&r.data),
        }
        let len = u16::try_from(self.buf.len() - start).unwrap_or(u16::MAX);
        self.buf[length_at..length_at + 2].copy_from_slice(&len.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(labels: &[&str]) -> Name {
        Name::new(labels).unwrap()
    }

    #[test]
    fn names_are_bounded_and_compared_without_case() {
        assert!(Name::new(&["a"; 127]).is_some(), "254 bytes");
        assert!(Name::new(&["a"; 128]).is_none(), "256 bytes");
        assert!(Name::new(&[""]).is_none());
        assert!(Name::new(&[&"x".repeat(64)]).is_none());
        assert!(name(&["Hearth", "LOCAL"]).same(&name(&["hearth", "local"])));
        assert!(!name(&["hearth", "local"]).same(&name(&["hearth2", "local"])));
        assert_eq!(name(&["a b", "local"]).to_string(), "a b.local.");
        let three = name(&["x", "_hap", "local"]);
        let labels: Vec<&[u8]> = three.labels().collect();
        assert_eq!(labels, [&b"x"[..], b"_hap", b"local"]);
    }

    /// A message written with compressed names reads back as it was, its names uncompressed.
    #[test]
    fn messages_read_back_what_was_written() {
        let service = name(&["_hap", "_tcp", "local"]);
        let instance = name(&["hearth", "_hap", "_tcp", "local"]);
        let host = name(&["hearth-abc", "local"]);
        let message = Message {
            id: 7,
            flags: RESPONSE | AUTHORITATIVE,
            questions: vec![Question {
                name: service.clone(),
                qtype: PTR,
                qclass: IN | TOP_BIT,
            }],
            answers: vec![Record {
                name: service.clone(),
                rtype: PTR,
                rclass: IN,
                ttl: 4500,
                data: instance.as_bytes().to_vec(),
            }],
            authority: vec![],
            additional: vec![
                Record {
                    name: instance.clone(),
                    rtype: SRV,
                    rclass: IN | TOP_BIT,
                    ttl: 120,
                    data: [&[0, 0, 0, 0, 0xCA, 0x12][..], host.as_bytes()].concat(),
                },
                Record {
                    name: host.clone(),
                    rtype: NSEC,
                    rclass: IN | TOP_BIT,
                    ttl: 120,
                    data: [host.as_bytes(), &[0, 1, 0x40]].concat(),
                },
                Record {
                    name: host.clone(),
                    rtype: A,
                    rclass: IN | TOP_BIT,
                    ttl: 120,
                    data: vec![10, 0, 0, 1],
                },
            ],
        };
        let bytes = message.encode();
        let plain: usize = 12
            + message
                .questions
                .iter()
                .map(|q| q.name.as_bytes().len() + 4)
                .sum::<usize>()
            + message
                .records()
                .map(|r| r.name.as_bytes().len() + 10 + r.data.len())
                .sum::<usize>();
        assert!(
            bytes.len() < plain - 40,
            "compressed: {} < {plain}",
            bytes.len()
        );
        assert_eq!(Message::parse(&bytes).unwrap(), message);
        assert!(message.questions[0].unicast_response());
        assert_eq!(message.additional[0].class(), IN);
    }

    #[test]
    fn a_pointer_must_point_before_the_labels_holding_it() {
        let header = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        // A pointer to itself.
        let own = [&header[..], &[0xC0, 12, 0, 1, 0, 1]].concat();
        assert_eq!(Message::parse(&own), Err(Error::Pointer { at: 12, to: 12 }));
        // Forwards.
        let forward = [&header[..], &[0xC0, 18, 0, 1, 0, 1, 1, b'a', 0]].concat();
        assert!(matches!(
            Message::parse(&forward),
            Err(Error::Pointer { .. })
        ));
        // Backwards, but into the labels that lead to it: a loop.
        let question = [1, b'a', 0xC0, 12, 0, 1, 0, 1];
        let looping = [&header[..], &question].concat();
        assert_eq!(
            Message::parse(&looping),
            Err(Error::Pointer { at: 14, to: 12 })
        );
        // A chain of names, each a label and a pointer to the one before: followed up to
        // the limit of pointers in one name.
        let mut chain = header.to_vec();
        chain.extend_from_slice(&[1, b'a', 0]);
        let mut links = vec![12usize];
        for _ in 0..=MAX_POINTERS {
            let here = chain.len();
            let previous = *links.last().unwrap() as u8;
            chain.extend_from_slice(&[1, b'b', 0xC0, previous]);
            links.push(here);
        }
        let (within, end) = read_name(&chain, links[MAX_POINTERS]).unwrap();
        assert_eq!(within.labels().count(), MAX_POINTERS + 1);
        assert_eq!(end, links[MAX_POINTERS] + 4);
        assert_eq!(
            read_name(&chain, links[MAX_POINTERS + 1]),
            Err(Error::Pointers {
                at: links[MAX_POINTERS + 1]
            })
        );
    }

    #[test]
    fn bad_packets_say_what_is_wrong() {
        assert_eq!(
            Message::parse(&[0; 5]),
            Err(Error::Short {
                at: 4,
                what: "the header"
            })
        );
        let mut many = vec![0u8; 12];
        many[4..6].copy_from_slice(&65u16.to_be_bytes());
        assert!(matches!(Message::parse(&many), Err(Error::Counts { .. })));
        let mut records = vec![0u8; 12];
        records[6..8].copy_from_slice(&200u16.to_be_bytes());
        records[10..12].copy_from_slice(&57u16.to_be_bytes());
        assert!(matches!(
            Message::parse(&records),
            Err(Error::Counts { .. })
        ));
        assert!(matches!(
            Message::parse(&vec![0; MAX_PACKET + 1]),
            Err(Error::TooLong(_))
        ));
        // A reserved label kind.
        let header = [0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        let reserved = [&header[..], &[0x41, 0, 0, 1, 0, 1]].concat();
        assert_eq!(Message::parse(&reserved), Err(Error::Label { at: 12 }));
        // A name of 256 bytes.
        let mut long = header.to_vec();
        for _ in 0..4 {
            long.push(63);
            long.extend_from_slice(&[b'x'; 63]);
        }
        long.extend_from_slice(&[0, 0, 1, 0, 1]);
        assert_eq!(Message::parse(&long), Err(Error::NameLength { at: 12 }));
        // A PTR whose data holds more than its name.
        let answer = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0];
        let ptr = [
            &answer[..],
            &[0, 0, 12, 0, 1, 0, 0, 0, 1, 0, 3, 0, 0xFF, 0xFF],
        ]
        .concat();
        assert_eq!(
            Message::parse(&ptr),
            Err(Error::Data { at: 23, rtype: PTR })
        );
        assert_eq!(
            Error::Pointer { at: 14, to: 12 }.to_string(),
            "a compression pointer at byte 14 to byte 12, not before the name holding it"
        );
    }

    #[test]
    fn records_compare_their_names_without_case() {
        let record = |rtype, data: &[u8]| Record {
            name: name(&["x", "local"]),
            rtype,
            rclass: IN,
            ttl: 1,
            data: data.to_vec(),
        };
        let lower = name(&["hearth-a", "local"]);
        let upper = name(&["HEARTH-A", "local"]);
        assert!(record(PTR, lower.as_bytes()).same_data(&record(PTR, upper.as_bytes())));
        let srv = |port: u8, host: &Name| [&[0, 0, 0, 0, 0, port][..], host.as_bytes()].concat();
        assert!(record(SRV, &srv(1, &lower)).same_data(&record(SRV, &srv(1, &upper))));
        assert!(!record(SRV, &srv(1, &lower)).same_data(&record(SRV, &srv(2, &lower))));
        assert!(!record(TXT, b"\x03a=b").same_data(&record(TXT, b"\x03A=b")));
        assert!(!record(A, &[1, 2, 3, 4]).same_data(&record(AAAA, &[1, 2, 3, 4])));
        let nsec = |n: &Name, bits: u8| [n.as_bytes(), &[0, 1, bits]].concat();
        assert!(record(NSEC, &nsec(&lower, 0x40)).same_data(&record(NSEC, &nsec(&upper, 0x40))));
        assert!(!record(NSEC, &nsec(&lower, 0x40)).same_data(&record(NSEC, &nsec(&lower, 0x60))));
    }
}
