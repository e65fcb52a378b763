//! SRP-6a, the server's side, as HAP's pair-setup uses it: RFC 5054's 3072-bit group (g = 5),
//! SHA-512, the username `Pair-Setup` and the setup code as the password.
//!
//! Where RFC 5054 leaves the byte forms open, HAP's controllers (iOS, aiohomekit) use:
//! `k = H(N | PAD(g))`, `x = H(s | H(I ":" P))`, `u = H(PAD(A) | PAD(B))`, the premaster
//! secret `S` padded to the group's length before `K = H(S)`, the proof
//! `M1 = H(H(N) xor H(g) | H(I) | s | PAD(A) | PAD(B) | K)` with `g` as its single byte, and
//! `M2 = H(PAD(A) | M1 | K)`. The arithmetic is written once over a [`Group`] so the RFC's own
//! test vectors (1024-bit group, SHA-1) check it.
//!
//! The big-integer crate's exponentiation is not constant-time; the verifier it works on is
//! made per pair-setup from a code the accessory shows, and pair-setup is throttled
//! (`pair_setup`), so a timing channel gives an attacker on the LAN nothing a hundred guesses
//! would not.

use num_bigint::BigUint;
use sha2::{Digest, Sha512};

/// The username HAP uses.
pub const USERNAME: &[u8] = b"Pair-Setup";

/// RFC 5054's 3072-bit prime.
const N_3072: &str = concat!(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74",
    "020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F1437",
    "4FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED",
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF05",
    "98DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB",
    "9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3B",
    "E39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF695581718",
    "3995497CEA956AE515D2261898FA051015728E5A8AAAC42DAD33170D04507A33",
    "A85521ABDF1CBA64ECFB850458DBEF0A8AEA71575D060C7DB3970F85A6E1E4C7",
    "ABF5AE8CDB0933D71E8C94E04A25619DCEE3D2261AD2EE6BF12FFA06D98A0864",
    "D87602733EC86A64521F2B18177B200CBBE117577A615D6C770988C0BAD946E2",
    "08E24FA074E5AB3143DB5BFCE0FD108E4B82D120A93AD2CAFFFFFFFFFFFFFFFF",
);

/// A group and hash SRP runs over.
pub struct Group {
    n: BigUint,
    g: BigUint,
    /// The prime's length in bytes: what `PAD` pads to.
    len: usize,
    hash: fn(&[&[u8]]) -> Vec<u8>,
}

fn sha512(parts: &[&[u8]]) -> Vec<u8> {
    let mut h = Sha512::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().to_vec()
}

impl Group {
    /// HAP's group: RFC 5054's 3072-bit prime, g = 5, SHA-512.
    pub fn hap() -> Group {
        Group::new(N_3072, 5, sha512)
    }

    /// A group of another prime `n_hex` with HAP's generator and hash: for the fuzz target
    /// (`tests/fuzz`), which runs pair-setup a million times in a small group (the arithmetic
    /// of the 3072-bit one, instrumented, takes a tenth of a second an exchange).
    #[doc(hidden)]
    pub fn hap_over(n_hex: &str) -> Group {
        Group::new(n_hex, 5, sha512)
    }

    fn new(n_hex: &str, g: u32, hash: fn(&[&[u8]]) -> Vec<u8>) -> Group {
        // The constants are this file's own; a bad digit would fail every test.
        let n = BigUint::parse_bytes(n_hex.as_bytes(), 16).unwrap_or_default();
        let len = n.to_bytes_be().len();
        Group {
            n,
            g: BigUint::from(g),
            len,
            hash,
        }
    }

    fn pad(&self, x: &BigUint) -> Vec<u8> {
        let bytes = x.to_bytes_be();
        let mut out = vec![0u8; self.len.saturating_sub(bytes.len())];
        out.extend_from_slice(&bytes);
        out
    }

    fn h(&self, parts: &[&[u8]]) -> Vec<u8> {
        (self.hash)(parts)
    }

    fn h_int(&self, parts: &[&[u8]]) -> BigUint {
        BigUint::from_bytes_be(&self.h(parts))
    }

    fn k(&self) -> BigUint {
        self.h_int(&[&self.n.to_bytes_be(), &self.pad(&self.g)])
    }

    fn x(&self, salt: &[u8], username: &[u8], password: &[u8]) -> BigUint {
        let inner = self.h(&[username, b":", password]);
        self.h_int(&[salt, &inner])
    }

    /// The verifier `v = g^x` for a username and password.
    pub fn verifier(&self, salt: &[u8], username: &[u8], password: &[u8]) -> BigUint {
        self.g.modpow(&self.x(salt, username, password), &self.n)
    }

    /// The server's public value `B = k·v + g^b`.
    fn public_b(&self, v: &BigUint, b: &BigUint) -> BigUint {
        (self.k() * v + self.g.modpow(b, &self.n)) % &self.n
    }

    fn u(&self, a_pub: &BigUint, b_pub: &BigUint) -> BigUint {
        self.h_int(&[&self.pad(a_pub), &self.pad(b_pub)])
    }

    /// The premaster secret `S = (A · v^u)^b`.
    fn premaster(&self, a_pub: &BigUint, v: &BigUint, u: &BigUint, b: &BigUint) -> BigUint {
        (a_pub * v.modpow(u, &self.n) % &self.n).modpow(b, &self.n)
    }
}

/// The server's side of one exchange, after it has sent its salt and `B`.
pub struct Server {
    group: Group,
    salt: Vec<u8>,
    username: Vec<u8>,
    v: BigUint,
    b: BigUint,
    b_pub: BigUint,
}

/// The client's `A` is zero modulo N (which would make the secret known) or longer than N, or
/// its proof is wrong.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused;

/// A verified exchange: the shared key `K` and the server's proof `M2`.
pub struct Verified {
    pub key: Vec<u8>,
    pub proof: Vec<u8>,
}

impl Server {
    /// Starts an exchange with a fresh salt and private value `b` (random bytes, from the
    /// caller).
    pub fn new(
        group: Group,
        username: &[u8],
        password: &[u8],
        salt: &[u8],
        b_bytes: &[u8],
    ) -> Server {
        let v = group.verifier(salt, username, password);
        let b = BigUint::from_bytes_be(b_bytes);
        let b_pub = group.public_b(&v, &b);
        Server {
            group,
            salt: salt.to_vec(),
            username: username.to_vec(),
            v,
            b,
            b_pub,
        }
    }

    pub fn salt(&self) -> &[u8] {
        &self.salt
    }

    /// `B`, padded to the group's length.
    pub fn public_key(&self) -> Vec<u8> {
        self.group.pad(&self.b_pub)
    }

    /// Checks the client's `A` and proof `M1`; on success gives `K` and `M2`.
    pub fn verify(&self, a_bytes: &[u8], client_proof: &[u8]) -> Result<Verified, Refused> {
        let g = &self.group;
        // A value longer than the group's is no honest client's (and costs more arithmetic).
        if a_bytes.len() > g.len {
            return Err(Refused);
        }
        let a_pub = BigUint::from_bytes_be(a_bytes);
        if (&a_pub % &g.n) == BigUint::ZERO {
            return Err(Refused);
        }
        let u = g.u(&a_pub, &self.b_pub);
        let s = g.premaster(&a_pub, &self.v, &u, &self.b);
        let key = g.h(&[&g.pad(&s)]);
        let (hn, hg) = (g.h(&[&g.n.to_bytes_be()]), g.h(&[&g.g.to_bytes_be()]));
        let group_hash: Vec<u8> = hn.iter().zip(&hg).map(|(a, b)| a ^ b).collect();
        let (a_pad, b_pad) = (g.pad(&a_pub), g.pad(&self.b_pub));
        let expected = g.h(&[
            &group_hash,
            &g.h(&[&self.username]),
            &self.salt,
            &a_pad,
            &b_pad,
            &key,
        ]);
        if !constant_time_eq(&expected, client_proof) {
            return Err(Refused);
        }
        let proof = g.h(&[&a_pad, &expected, &key]);
        Ok(Verified { key, proof })
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A controller's side of the exchange, for the tests of pair-setup: `A` (padded), the proof
/// `M1` and the key `K` for `password`, against the accessory's salt and `B`, with the private
/// value `a` (random bytes in a real controller).
#[cfg(test)]
pub(crate) fn client(
    salt: &[u8],
    b_pub: &[u8],
    password: &[u8],
    a: &[u8],
) -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let g = Group::hap();
    let a = BigUint::from_bytes_be(a);
    let a_pub = g.g.modpow(&a, &g.n);
    let b_pub = BigUint::from_bytes_be(b_pub);
    let x = g.x(salt, USERNAME, password);
    let u = g.u(&a_pub, &b_pub);
    let kv = g.k() * g.g.modpow(&x, &g.n) % &g.n;
    let base = (&b_pub + &g.n - kv) % &g.n;
    let s = base.modpow(&(a + u * x), &g.n);
    let key = g.h(&[&g.pad(&s)]);
    let (hn, hg) = (g.h(&[&g.n.to_bytes_be()]), g.h(&[&[5u8]]));
    let group_hash: Vec<u8> = hn.iter().zip(&hg).map(|(a, b)| a ^ b).collect();
    let m1 = g.h(&[
        &group_hash,
        &g.h(&[USERNAME]),
        salt,
        &g.pad(&a_pub),
        &g.pad(&b_pub),
        &key,
    ]);
    (g.pad(&a_pub), m1, key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha1::Sha1;

    fn sha1(parts: &[&[u8]]) -> Vec<u8> {
        let mut h = Sha1::new();
        for p in parts {
            h.update(p);
        }
        h.finalize().to_vec()
    }

    fn int(hex: &str) -> BigUint {
        let clean: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
        BigUint::parse_bytes(clean.as_bytes(), 16).unwrap()
    }

    /// RFC 5054, appendix B: the 1024-bit group with SHA-1.
    #[test]
    fn rfc_5054_test_vectors() {
        let group = Group::new(
            concat!(
                "EEAF0AB9ADB38DD69C33F80AFA8FC5E86072618775FF3C0B9EA2314C9C256576D674DF7496",
                "EA81D3383B4813D692C6E0E0D5D8E250B98BE48E495C1D6089DAD15DC7D7B46154D6B6CE8E",
                "F4AD69B15D4982559B297BCF1885C529F566660E57EC68EDBC3C05726CC02FD4CBF4976EAA",
                "9AFD5138FE8376435B9FC61D2FC0EB06E3"
            ),
            2,
            sha1,
        );
        let salt = int("BEB25379 D1A8581E B5A72767 3A2441EE").to_bytes_be();
        assert_eq!(
            group.k(),
            int("7556AA04 5AEF2CDD 07ABAF0F 665C3E81 8913186F")
        );
        assert_eq!(
            group.x(&salt, b"alice", b"password123"),
            int("94B7555A ABE9127C C58CCF49 93DB6CF8 4D16C124")
        );
        let v = group.verifier(&salt, b"alice", b"password123");
        assert_eq!(
            v,
            int(
                "7E273DE8 696FFC4F 4E337D05 B4B375BE B0DDE156 9E8FA00A 9886D812
                 9BADA1F1 822223CA 1A605B53 0E379BA4 729FDC59 F105B478 7E5186F5
                 C671085A 1447B52A 48CF1970 B4FB6F84 00BBF4CE BFBB1681 52E08AB5
                 EA53D15C 1AFF87B2 B9DA6E04 E058AD51 CC72BFC9 033B564E 26480D78
                 E955A5E2 9E7AB245 DB2BE315 E2099AFB"
            )
        );
        let a = int("60975527 035CF2AD 1989806F 0407210B C81EDC04 E2762A56 AFD529DD DA2D4393");
        let b = int("E487CB59 D31AC550 471E81F0 0F6928E0 1DDA08E9 74A004F4 9E61F5D1 05284D20");
        let a_pub = group.g.modpow(&a, &group.n);
        assert_eq!(
            a_pub,
            int(
                "61D5E490 F6F1B795 47B0704C 436F523D D0E560F0 C64115BB 72557EC4
                 4352E890 3211C046 92272D8B 2D1A5358 A2CF1B6E 0BFCF99F 921530EC
                 8E393561 79EAE45E 42BA92AE ACED8251 71E1E8B9 AF6D9C03 E1327F44
                 BE087EF0 6530E69F 66615261 EEF54073 CA11CF58 58F0EDFD FE15EFEA
                 B349EF5D 76988A36 72FAC47B 0769447B"
            )
        );
        let b_pub = group.public_b(&v, &b);
        assert_eq!(
            b_pub,
            int(
                "BD0C6151 2C692C0C B6D041FA 01BB152D 4916A1E7 7AF46AE1 05393011
                 BAF38964 DC46A067 0DD125B9 5A981652 236F99D9 B681CBF8 7837EC99
                 6C6DA044 53728610 D0C6DDB5 8B318885 D7D82C7F 8DEB75CE 7BD4FBAA
                 37089E6F 9C6059F3 88838E7A 00030B33 1EB76840 910440B1 B27AAEAE
                 EB4012B7 D7665238 A8E3FB00 4B117B58"
            )
        );
        let u = group.u(&a_pub, &b_pub);
        assert_eq!(u, int("CE38B959 3487DA98 554ED47D 70A7AE5F 462EF019"));
        assert_eq!(
            group.premaster(&a_pub, &v, &u, &b),
            int(
                "B0DC82BA BCF30674 AE450C02 87745E79 90A3381F 63B387AA F271A10D
                 233861E3 59B48220 F7C4693C 9AE12B0A 6F67809F 0876E2D0 13800D6C
                 41BB59B6 D5979B5C 00A172B4 A2A5903A 0BDCAF8A 709585EB 2AFAFA8F
                 3499B200 210DCC1F 10EB3394 3CD67FC8 8A2F39A4 BE5BEC4E C0A3212D
                 C346D7E4 74B29EDE 8A469FFE CA686E5A"
            )
        );
    }

    /// HAP's multiplier, as HomeKit controllers hard-code it (aiohomekit's `CLIENT_K_VALUE`).
    #[test]
    fn hap_group_multiplier() {
        assert_eq!(
            Group::hap().k(),
            int(
                "a9c2e2559bf0ebb53f0cbbf62282906bede7f2182f00678211fbd5bde5b285033a4993503b\
                 87397f9be5ec02080fedbc0835587ad039060879b8621e8c3659e0"
            )
        );
        assert_eq!(Group::hap().len, 384);
    }

    /// A client written from the same formulas completes the exchange; a wrong password or a
    /// zero `A` is refused.
    #[test]
    fn a_client_with_the_code_is_verified_and_others_are_not() {
        let salt = [3u8; 16];
        let server = Server::new(Group::hap(), USERNAME, b"123-45-679", &salt, &[9u8; 32]);
        let g = Group::hap();
        let prove = |password: &[u8]| client(&salt, &server.public_key(), password, &[7u8; 32]);
        let (a_pub, m1, key) = prove(b"123-45-679");
        let verified = server.verify(&a_pub, &m1).unwrap();
        assert_eq!(verified.key, key);
        assert_eq!(verified.proof, g.h(&[&a_pub, &m1, &key]));
        let (a_pub, m1, _) = prove(b"123-45-678");
        assert!(server.verify(&a_pub, &m1).is_err());
        assert_eq!(server.verify(&g.pad(&g.n), &m1).err(), Some(Refused));
        assert_eq!(server.verify(&[1; 385], &m1).err(), Some(Refused));
    }
}
