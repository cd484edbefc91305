//! su: run a shell (or `-c CMD`) as another user, root by default:
//! `su [-|-l] [USER] [-c CMD]`. Set-user-ID root (`/bin/su` is 04755), so
//! it can read `/etc/shadow` and change its uid; it asks for the target's
//! password on the terminal (no echo) unless the real uid (who ran it) is
//! root. A wrong password: "su: Authentication failure", status 1, and no
//! uid changes. `-` or `-l`: a login shell (fresh environment, cwd =
//! home); else the environment is kept with HOME, USER, LOGNAME and SHELL
//! set to the target's. The shell's status is su's (it replaces su).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

use login::{db, password, sys};
use runtime::{eprintln, unix};

runtime::entry!(main);

fn main(args: runtime::Args) -> i32 {
    let mut login = false;
    let mut command = None;
    let mut user = None;
    let mut rest = args.iter().skip(1);
    while let Some(a) = rest.next() {
        match a {
            "-" | "-l" | "--login" => login = true,
            "-c" | "--command" => match rest.next() {
                Some(c) => command = Some(c),
                None => {
                    eprintln!("su: option '-c' requires an argument");
                    return 2;
                }
            },
            _ if a.starts_with('-') => {
                eprintln!("su: invalid option '{a}'\nusage: su [-] [USER] [-c COMMAND]");
                return 2;
            }
            _ if user.is_none() => user = Some(a),
            _ => {
                eprintln!("su: extra operand '{a}'");
                return 2;
            }
        }
    }
    let name = user.unwrap_or("root");
    let passwd = match sys::read_file(sys::PASSWD) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("su: {}: {}", sys::PASSWD, e.name());
            return 1;
        }
    };
    let Some(target) = db::user_by_name(&passwd, name) else {
        eprintln!("su: user {name} does not exist");
        return 1;
    };
    if unix::getruid() != 0 {
        // Without the set-user-ID bit (or run by a user from a copy) the
        // shadow file is closed to it: that is a failure too.
        let shadow = sys::read_file(sys::SHADOW).ok();
        let entered = sys::ask_password("Password: ");
        let hash = shadow.as_deref().and_then(|s| db::shadow_hash(s, name));
        let ok = matches!((entered, hash), (Some(pw), Some(h)) if password::matches(&pw, h));
        if !ok {
            eprintln!("su: Authentication failure");
            return 1;
        }
    }
    if login {
        sys::make_home(&target);
    }
    if let Err(e) = sys::become_user(&target) {
        eprintln!("su: cannot become {name}: {}", e.name());
        return 1;
    }
    let e = sys::exec_shell(&target, login, command);
    eprintln!("su: {}: {}", target.shell, e.name());
    if e == protocols::unix::errno::ENOENT { 127 } else { 126 }
}
