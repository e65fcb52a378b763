//! Certificates for HTTPS tests, made by the `openssl` command: a CA, and a server
//! certificate for 127.0.0.1 (and `localhost`) signed by it.

use std::path::Path;
use std::process::Command;

#[derive(Clone, Copy, Debug)]
pub enum KeyKind {
    Pkcs8Rsa,
    Pkcs1Rsa,
    Sec1Ec,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ca.pem`, and `fullchain.pem` + `privkey.pem` for 127.0.0.1 signed by it.
pub fn make_certificates(dir: &Path, kind: KeyKind) {
    let quiet = ["-subj"];
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            quiet[0],
            "/CN=hearth test CA",
        ],
    );
    match kind {
        KeyKind::Pkcs8Rsa => openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                "privkey.pem",
            ],
        ),
        KeyKind::Pkcs1Rsa => openssl(
            dir,
            &["genrsa", "-traditional", "-out", "privkey.pem", "2048"],
        ),
        KeyKind::Sec1Ec => openssl(
            dir,
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                "privkey.pem",
            ],
        ),
    }
    let header = std::fs::read_to_string(dir.join("privkey.pem")).unwrap();
    let expected = match kind {
        KeyKind::Pkcs8Rsa => "BEGIN PRIVATE KEY",
        KeyKind::Pkcs1Rsa => "BEGIN RSA PRIVATE KEY",
        KeyKind::Sec1Ec => "BEGIN EC PRIVATE KEY",
    };
    assert!(header.contains(expected), "{kind:?}: {header}");
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-key",
            "privkey.pem",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    let chain = std::fs::read_to_string(dir.join("server.pem")).unwrap()
        + &std::fs::read_to_string(dir.join("ca.pem")).unwrap();
    std::fs::write(dir.join("fullchain.pem"), chain).unwrap();
}
