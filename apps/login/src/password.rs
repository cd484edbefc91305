//! Checking a password against a shadow(5) hash: SHA-crypt in the
//! Modular Crypt Format, `$6$[rounds=N$]SALT$HASH` (SHA-512) or `$5$…`
//! (SHA-256), as glibc's crypt(3) and `openssl passwd -6` make them
//! (Drepper, "Unix crypt using SHA-256 and SHA-512"). The hashing is
//! RustCrypto's `sha-crypt`; this module only splits the string and
//! compares.
//!
//! What it is not: a hash maker (the boot image's hashes are made on the
//! host, docs/reliability.md), nor a check of other schemes: DES, MD5
//! (`$1$`) and the rest never match.
//!
//! Invariants: a locked or disabled entry (`!…`, `*`) never matches; an
//! empty hash field matches only the empty password (shadow(5): no
//! password needed); the final comparison takes the same time wherever
//! the first difference is.

use sha_crypt::{Sha256Params, Sha512Params, sha256_crypt_b64, sha512_crypt_b64};

/// The rounds when a hash names none (`ROUNDS_DEFAULT` of the scheme).
const DEFAULT_ROUNDS: usize = sha_crypt::ROUNDS_DEFAULT;

/// Does `password` match the shadow `hash`?
pub fn matches(password: &[u8], hash: &str) -> bool {
    if hash.is_empty() {
        return password.is_empty();
    }
    let mut parts = hash.split('$');
    let (Some(""), Some(scheme), Some(mut next)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    let rounds = match next.strip_prefix("rounds=") {
        Some(n) => {
            let Ok(n) = n.parse::<usize>() else { return false };
            let Some(after) = parts.next() else { return false };
            next = after;
            // crypt(3) clamps the rounds into its range.
            n.clamp(sha_crypt::ROUNDS_MIN, sha_crypt::ROUNDS_MAX)
        }
        None => DEFAULT_ROUNDS,
    };
    let (salt, Some(expected), None) = (next, parts.next(), parts.next()) else { return false };
    let computed = match scheme {
        "6" => {
            Sha512Params::new(rounds).ok().and_then(|p| sha512_crypt_b64(password, salt.as_bytes(), &p).ok())
        }
        "5" => {
            Sha256Params::new(rounds).ok().and_then(|p| sha256_crypt_b64(password, salt.as_bytes(), &p).ok())
        }
        _ => None,
    };
    computed.is_some_and(|c| same_bytes(c.as_bytes(), expected.as_bytes()))
}

/// Equal, in a time that depends only on the lengths.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::shadow_hash;

    const SHADOW: &str = include_str!("../../../etc/shadow");

    /// The boot image's test passwords (README, docs/reliability.md) match
    /// the hashes `openssl passwd -6` made, and nothing else does.
    #[test]
    fn the_boot_image_passwords() {
        for (name, pw) in [("root", "root"), ("user", "user"), ("guest", "guest")] {
            let hash = shadow_hash(SHADOW, name).unwrap();
            assert!(matches(pw.as_bytes(), hash), "{name}");
            assert!(!matches(b"wrong", hash), "{name}");
            assert!(!matches(b"", hash), "{name}");
            assert!(!matches(&[pw.as_bytes(), b"x"].concat(), hash), "{name}");
        }
    }

    /// Drepper's test vectors (rounds given, and the $5$ scheme; the
    /// latter as `openssl passwd -5 -salt saltstring` makes it too).
    #[test]
    fn reference_vectors() {
        assert!(matches(
            b"Hello world!",
            "$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."
        ));
        assert!(matches(b"Hello world!", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"));
        assert!(!matches(b"Hello world?", "$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"));
    }

    #[test]
    fn locked_malformed_and_other_schemes_never_match() {
        for hash in [
            "!",
            "*",
            "!$6$ridgebackuser$x",
            "$6$",
            "$6$salt",
            "$6$rounds=x$salt$hash",
            "$6$salt$hash$extra",
            "$1$salt$hash",
            "$2b$10$abcdefghijklmnopqrstuv",
            "plain",
        ] {
            assert!(!matches(b"", hash), "{hash}");
            assert!(!matches(b"user", hash), "{hash}");
        }
        assert!(matches(b"", ""));
        assert!(!matches(b"x", ""));
    }
}
