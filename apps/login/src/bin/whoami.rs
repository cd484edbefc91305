//! whoami: the name of the caller's (effective) uid in `/etc/passwd`;
//! status 1 when it has none (GNU's message).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use login::{db, sys};
use runtime::{eprintln, println, unix};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    if let Some(extra) = args.iter().nth(1) {
        eprintln!("whoami: extra operand '{extra}'");
        return 2;
    }
    let uid = unix::getuid();
    let passwd = sys::read_file(sys::PASSWD).unwrap_or_default();
    match db::user_by_uid(&passwd, uid) {
        Some(u) => {
            println!("{}", u.name);
            0
        }
        None => {
            eprintln!("whoami: cannot find name for user ID {uid}");
            1
        }
    }
}
