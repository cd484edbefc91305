//! The user database's three files, parsed: `/etc/passwd`
//! (`name:x:uid:gid:gecos:home:shell`, passwd(5)), `/etc/group`
//! (`name:x:gid:member,member`, group(5)) and `/etc/shadow`
//! (`name:hash:lastchg:min:max:warn:inactive:expire:`, shadow(5)).
//!
//! What it is not: a cache or a writer; each lookup reads the text it is
//! given, which is a few lines.
//!
//! Invariants: a line with the wrong number of fields, or a number that
//! is not one, is skipped as glibc's parser skips it (it can name nobody);
//! blank lines and `#` comments are skipped too.

/// One `/etc/passwd` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Passwd<'a> {
    pub name: &'a str,
    pub uid: u32,
    pub gid: u32,
    pub gecos: &'a str,
    pub home: &'a str,
    pub shell: &'a str,
}

/// One `/etc/group` entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group<'a> {
    pub name: &'a str,
    pub gid: u32,
    members: &'a str,
}

impl<'a> Group<'a> {
    /// The user names of its member list.
    pub fn members(&self) -> impl Iterator<Item = &'a str> {
        self.members.split(',').filter(|m| !m.is_empty())
    }
}

fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
}

/// Every well-formed entry of a passwd file.
pub fn users(text: &str) -> impl Iterator<Item = Passwd<'_>> {
    lines(text).filter_map(|l| {
        let f: alloc::vec::Vec<&str> = l.split(':').collect();
        let [name, _, uid, gid, gecos, home, shell] = f[..] else { return None };
        Some(Passwd { name, uid: uid.parse().ok()?, gid: gid.parse().ok()?, gecos, home, shell })
    })
}

/// Every well-formed entry of a group file.
pub fn groups(text: &str) -> impl Iterator<Item = Group<'_>> {
    lines(text).filter_map(|l| {
        let f: alloc::vec::Vec<&str> = l.split(':').collect();
        let [name, _, gid, members] = f[..] else { return None };
        Some(Group { name, gid: gid.parse().ok()?, members })
    })
}

pub fn user_by_name<'a>(passwd: &'a str, name: &str) -> Option<Passwd<'a>> {
    users(passwd).find(|u| u.name == name)
}

pub fn user_by_uid(passwd: &str, uid: u32) -> Option<Passwd<'_>> {
    users(passwd).find(|u| u.uid == uid)
}

pub fn group_by_gid(group: &str, gid: u32) -> Option<Group<'_>> {
    groups(group).find(|g| g.gid == gid)
}

/// The password hash of `name` in a shadow file (its second field), if
/// the user has an entry of nine fields.
pub fn shadow_hash<'a>(shadow: &'a str, name: &str) -> Option<&'a str> {
    lines(shadow).find_map(|l| {
        let f: alloc::vec::Vec<&str> = l.split(':').collect();
        (f.len() == 9 && f[0] == name).then_some(f[1])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWD: &str = include_str!("../../../etc/passwd");
    const GROUP: &str = include_str!("../../../etc/group");
    const SHADOW: &str = include_str!("../../../etc/shadow");

    #[test]
    fn the_boot_image_users() {
        let root = user_by_name(PASSWD, "root").unwrap();
        assert_eq!((root.uid, root.gid, root.home, root.shell), (0, 0, "/root", "/bin/sh"));
        let user = user_by_name(PASSWD, "user").unwrap();
        assert_eq!((user.uid, user.gid, user.home, user.shell), (1000, 1000, "/home/user", "/bin/sh"));
        let guest = user_by_uid(PASSWD, 1001).unwrap();
        assert_eq!(guest.name, "guest");
        assert!(user_by_name(PASSWD, "nobody-here").is_none());
        let users_group = groups(GROUP).find(|g| g.name == "users").unwrap();
        assert_eq!(users_group.members().collect::<alloc::vec::Vec<_>>(), ["user", "guest"]);
        for name in ["root", "user", "guest"] {
            assert!(shadow_hash(SHADOW, name).unwrap().starts_with("$6$"), "{name}");
        }
    }

    #[test]
    fn malformed_lines_name_nobody() {
        let text =
            "# comment\n\nshort:x:1\nbad:x:one:2:g:/h:/s\nok:x:5:6::/h:/bin/sh\nextra:x:7:8:g:/h:/s:more\n";
        let all: alloc::vec::Vec<&str> = users(text).map(|u| u.name).collect();
        assert_eq!(all, ["ok"]);
        assert_eq!(
            groups("g:x:notanumber:\nh:x:3\nk:x:4:a,,b\n").map(|g| g.gid).collect::<alloc::vec::Vec<_>>(),
            [4]
        );
        assert_eq!(
            groups("k:x:4:a,,b\n").next().unwrap().members().collect::<alloc::vec::Vec<_>>(),
            ["a", "b"]
        );
        assert_eq!(shadow_hash("a:$6$x$y:1:2:3\n", "a"), None);
        assert_eq!(shadow_hash("a:*:1:0:99999:7:::\n", "a"), Some("*"));
    }
}
