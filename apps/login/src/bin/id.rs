//! id: the caller's user and group ids and names (`id`), or a user's
//! from `/etc/passwd` (`id USER`); `-u`, `-g`, `-G` print one field, `-n`
//! names instead of numbers (GNU's options and format). Groups are the
//! process's gid and the `/etc/group` entries whose member list names the
//! user: the monitor keeps no supplementary groups.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use login::{db, sys};
use runtime::{eprintln, println, unix};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let (mut field, mut names) = (None, false);
    let mut operands: Vec<&str> = Vec::new();
    for a in args.iter().skip(1) {
        match a {
            "-u" | "-g" | "-G" => field = Some(a),
            "-n" => names = true,
            "-un" | "-nu" => (field, names) = (Some("-u"), true),
            "-gn" | "-ng" => (field, names) = (Some("-g"), true),
            "-Gn" | "-nG" => (field, names) = (Some("-G"), true),
            _ if a.starts_with('-') && a.len() > 1 => {
                eprintln!("id: invalid option '{a}'\nusage: id [-u|-g|-G] [-n] [USER]");
                return 2;
            }
            _ => operands.push(a),
        }
    }
    if operands.len() > 1 || (names && field.is_none()) {
        eprintln!("usage: id [-u|-g|-G] [-n] [USER]");
        return 2;
    }
    let passwd = sys::read_file(sys::PASSWD).unwrap_or_default();
    let group = sys::read_file(sys::GROUP).unwrap_or_default();
    let (uid, gid, user) = match operands.first() {
        Some(name) => match db::user_by_name(&passwd, name) {
            Some(u) => (u.uid, u.gid, Some(u.name)),
            None => {
                eprintln!("id: '{name}': no such user");
                return 1;
            }
        },
        None => (unix::getuid(), unix::getgid(), None),
    };
    let line = login::id_text(uid, gid, user, &passwd, &group);
    let Some(field) = field else {
        println!("{line}");
        return 0;
    };
    // One field of the line: `uid=1000(user)` → 1000 or user.
    let key = match field {
        "-u" => "uid=",
        "-g" => "gid=",
        _ => "groups=",
    };
    let value = line.split(' ').find_map(|w| w.strip_prefix(key)).unwrap_or("");
    let shown: Vec<String> = value
        .split(',')
        .map(|item| match (names, item.split_once('(')) {
            (true, Some((_, name))) => String::from(name.trim_end_matches(')')),
            (_, Some((number, _))) => String::from(number),
            (_, None) => String::from(item),
        })
        .collect();
    println!("{}", shown.join(" "));
    0
}
