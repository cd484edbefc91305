//! chmod's modes (POSIX `chmod`, XCU): octal (`755`, `4755`) or symbolic
//! clauses `[ugoa]*[-+=][rwxXst]*` (or a copy `[-+=][ugo]`), comma
//! separated. With no `ugoa`, `+` and `=` respect the umask (`-` too, as
//! POSIX says "as if a had been given, but with the umask's bits kept").

use alloc::format;
use alloc::string::String;

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_ISVTX: u32 = 0o1000;

/// The new permission bits (the low 12) of a file whose bits are `old`.
/// `is_dir` decides `X`; `umask` applies to clauses without `ugoa`.
pub fn apply(spec: &str, old: u32, is_dir: bool, umask: u32) -> Result<u32, String> {
    let invalid = || format!("invalid mode: '{spec}'");
    if !spec.is_empty() && spec.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
        if spec.len() > 4 {
            return Err(invalid());
        }
        return u32::from_str_radix(spec, 8).map_err(|_| invalid());
    }
    let mut mode = old & 0o7777;
    for clause in spec.split(',') {
        let b = clause.as_bytes();
        let mut i = 0;
        let mut who = 0u32;
        while i < b.len() && b"ugoa".contains(&b[i]) {
            who |= match b[i] {
                b'u' => 0o4700 | S_ISUID,
                b'g' => 0o2070 | S_ISGID,
                b'o' => 0o0007,
                _ => 0o7777,
            };
            i += 1;
        }
        let masked = who == 0;
        if masked {
            who = 0o7777;
        }
        if i >= b.len() {
            return Err(invalid());
        }
        while i < b.len() {
            let op = b[i];
            if !b"+-=".contains(&op) {
                return Err(invalid());
            }
            i += 1;
            let mut perm = 0u32;
            if i < b.len() && b"ugo".contains(&b[i]) {
                // Copy another class's bits (`g=u`).
                let bits = match b[i] {
                    b'u' => (mode >> 6) & 7,
                    b'g' => (mode >> 3) & 7,
                    _ => mode & 7,
                };
                perm = bits << 6 | bits << 3 | bits;
                i += 1;
            } else {
                while i < b.len() && b"rwxXst".contains(&b[i]) {
                    perm |= match b[i] {
                        b'r' => 0o444,
                        b'w' => 0o222,
                        b'x' => 0o111,
                        b'X' if is_dir || mode & 0o111 != 0 => 0o111,
                        b'X' => 0,
                        b's' => S_ISUID | S_ISGID,
                        _ => S_ISVTX,
                    };
                    i += 1;
                }
            }
            let mut affected = perm & who;
            if masked {
                affected &= !umask;
            }
            match op {
                b'+' => mode |= affected,
                b'-' => mode &= !affected,
                _ => {
                    let cleared = if masked { who & !umask & 0o777 } else { who & 0o777 };
                    mode = (mode & !cleared & !(who & (S_ISUID | S_ISGID | S_ISVTX) & !perm)) | affected;
                }
            }
        }
    }
    Ok(mode)
}

#[cfg(test)]
mod tests {
    use super::apply;

    #[test]
    fn octal() {
        assert_eq!(apply("755", 0, false, 0o022), Ok(0o755));
        assert_eq!(apply("4711", 0o644, false, 0o022), Ok(0o4711));
        assert_eq!(apply("0", 0o644, false, 0), Ok(0));
        assert!(apply("78", 0, false, 0).is_err());
        assert!(apply("77777", 0, false, 0).is_err());
    }

    #[test]
    fn symbolic() {
        let a = |s, old| apply(s, old, false, 0o022).unwrap();
        assert_eq!(a("u+x", 0o644), 0o744);
        assert_eq!(a("go-r", 0o644), 0o600);
        assert_eq!(a("a=r", 0o777), 0o444);
        assert_eq!(a("+x", 0o644), 0o755);
        assert_eq!(a("+w", 0o444), 0o644, "the umask keeps group and other write off");
        assert_eq!(a("-w", 0o666), 0o444 | 0o022, "-w without who keeps the umask's bits");
        assert_eq!(a("u=rw,g=r,o=", 0o777), 0o640);
        assert_eq!(a("g=u", 0o740), 0o770);
        assert_eq!(a("u+s", 0o755), 0o4755);
        assert_eq!(a("+t", 0o755), 0o1755);
        assert_eq!(a("a+X", 0o644), 0o644);
        assert_eq!(a("a+X", 0o744), 0o755);
        assert_eq!(apply("a+X", 0o644, true, 0).unwrap(), 0o755);
        assert_eq!(a("u+x,u-x", 0o644), 0o644);
        assert_eq!(a("o+rw-w", 0o640), 0o644);
        for bad in ["", "u", "u+z", "q+x", "u+x,", "+x,bad"] {
            assert!(apply(bad, 0o644, false, 0o022).is_err(), "{bad}");
        }
    }
}
