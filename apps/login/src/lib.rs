//! Users of Ridgeback's UNIX personality: the user database
//! (`/etc/passwd`, `/etc/group`, `/etc/shadow`, the colon formats of
//! passwd(5), group(5) and shadow(5)) and the password check, shared by
//! `id`, `whoami`, `su` and `login` (one program per file under
//! `src/bin/`).
//!
//! - [`db`]: parsing the three files and finding entries (pure);
//! - [`password`]: checking a password against a shadow hash, SHA-crypt
//!   (`$5$`, `$6$`) through RustCrypto's `sha-crypt`, never hashing by
//!   hand (pure);
//! - [`id_text`]: what `id` prints (pure);
//! - [`sys`] (target only): reading the files, the password prompt
//!   without echo, starting a user's shell.
//!
//! The pure parts are tested on the host (`cargo test -p login --lib`, a
//! step of `cargo xtask test`), against the repository's own `etc/`
//! files among others.
//!
//! What it is not: the security. The monitor keeps uids and checks every
//! permission (docs/unix.md, "Who decides what"); these programs only
//! decide whether to ask it to change a uid, which it allows only to root
//! (`su` is set-user-ID root for that, `login` is run by root).

#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(test)]
extern crate std;

pub mod db;
pub mod password;

#[cfg(target_os = "none")]
pub mod sys;

pub use db::{Group, Passwd};

/// `id`'s line for `user` (uid, gid and the groups whose member lists
/// name it, GNU's format): `uid=1000(user) gid=1000(user)
/// groups=1000(user),100(users)`. A number with no name is printed bare.
pub fn id_text(uid: u32, gid: u32, user: Option<&str>, passwd: &str, group: &str) -> alloc::string::String {
    use alloc::format;
    let user_name = db::user_by_uid(passwd, uid).map(|p| p.name);
    let named = |n: u32, name: Option<&str>| match name {
        Some(s) => format!("{n}({s})"),
        None => format!("{n}"),
    };
    let group_name = |g: u32| db::group_by_gid(group, g).map(|g| g.name);
    let mut out = format!("uid={} gid={}", named(uid, user_name), named(gid, group_name(gid)));
    let mut groups = alloc::vec![gid];
    if let Some(u) = user.or(user_name) {
        for g in db::groups(group).filter(|g| g.members().any(|m| m == u)) {
            if !groups.contains(&g.gid) {
                groups.push(g.gid);
            }
        }
    }
    out.push_str(" groups=");
    let list: alloc::vec::Vec<_> = groups.iter().map(|&g| named(g, group_name(g))).collect();
    out.push_str(&list.join(","));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = include_str!("../../../etc/passwd");
    const GROUP: &str = include_str!("../../../etc/group");

    #[test]
    fn id_lines_as_gnu_prints_them() {
        assert_eq!(id_text(0, 0, None, PASSWD, GROUP), "uid=0(root) gid=0(root) groups=0(root)");
        assert_eq!(
            id_text(1000, 1000, None, PASSWD, GROUP),
            "uid=1000(user) gid=1000(user) groups=1000(user),100(users)"
        );
        assert_eq!(id_text(4242, 77, None, PASSWD, GROUP), "uid=4242 gid=77 groups=77");
    }
}
