//! Certificates for the TLS tests, made at test time with Debian's
//! `openssl` (installed with apt-get when missing): a CA, a server
//! certificate it signs for `127.0.0.1` and `localhost`, and a second,
//! unrelated CA that must be refused. EC P-256 keys (fast to make).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The files one test's servers and clients use.
pub struct Certs {
    pub dir: PathBuf,
    /// The CA that signed `cert`.
    pub ca: PathBuf,
    /// The server's certificate (SAN: IP 127.0.0.1, DNS localhost) and key.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// A CA that signed nothing here.
    pub other_ca: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ensure_openssl() {
    let found = Command::new("sh")
        .args(["-c", "command -v openssl >/dev/null"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !found {
        let status = Command::new("flock")
            .args(["/tmp/schedpool-apt.lock", "sh", "-c"])
            .arg(
                "command -v openssl >/dev/null || { apt-get update -qq && \
                 DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null; }",
            )
            .status()
            .expect("run apt-get");
        assert!(status.success(), "could not install openssl with apt-get");
    }
}

fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-new",
            "-nodes",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-days",
            "2",
            "-subj",
            &format!("/CN=schedpool test {name}"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
}

impl Certs {
    /// Makes the certificates in a new directory under the temp dir.
    pub fn generate(tag: &str) -> Certs {
        ensure_openssl();
        let dir = std::env::temp_dir().join(format!(
            "schedpool-certs-{}-{tag}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        make_ca(&dir, "ca");
        make_ca(&dir, "other-ca");
        openssl(
            &dir,
            &[
                "req",
                "-new",
                "-nodes",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:prime256v1",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        std::fs::write(
            dir.join("server.ext"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            &dir,
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
                "server.ext",
            ],
        );
        Certs {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
            other_ca: dir.join("other-ca.pem"),
            dir,
        }
    }
}

impl Drop for Certs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
