//! login: `login [USER]`: asks for a name (unless given) and its password
//! (no echo), then becomes that user and replaces itself by their shell
//! from `/etc/passwd`, a login shell: HOME, USER, LOGNAME, SHELL and PATH
//! set, the working directory their home (made, mode 0700, when missing).
//! Run by root (from the console's shell or init): the monitor lets
//! nobody else change a uid. A wrong name or password: "Login incorrect",
//! and the prompt again, three tries in all; then status 1. End of input
//! at a prompt: status 1.

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use login::{db, password, sys};
use runtime::{eprintln, unix};

runtime::entry!(main);

/// Tries before login gives up (util-linux's default is 3 too).
const TRIES: u32 = 3;

fn main(args: runtime::Args) -> i32 {
    let given = args.iter().nth(1);
    if args.iter().nth(2).is_some() {
        eprintln!("usage: login [USER]");
        return 2;
    }
    if unix::getuid() != 0 {
        eprintln!("login: must be run by root");
        return 1;
    }
    let (passwd, shadow) = match (sys::read_file(sys::PASSWD), sys::read_file(sys::SHADOW)) {
        (Ok(p), Ok(s)) => (p, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("login: cannot read the user database: {}", e.name());
            return 1;
        }
    };
    for attempt in 0..TRIES {
        let name = match given.filter(|_| attempt == 0) {
            Some(n) => String::from(n),
            None => {
                let _ = unix::write(2, b"login: ");
                match sys::read_line(0) {
                    Some(l) => String::from_utf8_lossy(&l).into_owned(),
                    None => return 1,
                }
            }
        };
        let Some(entered) = sys::ask_password("Password: ") else { return 1 };
        let user = db::user_by_name(&passwd, name.trim());
        // The password is checked for unknown names too (against nothing),
        // so the answer does not say which names exist.
        let hash = user.and_then(|u| db::shadow_hash(&shadow, u.name));
        if let (Some(u), Some(h)) = (user, hash)
            && password::matches(&entered, h)
        {
            // The home is made as root, before the uid changes.
            sys::make_home(&u);
            if let Err(e) = sys::become_user(&u) {
                eprintln!("login: cannot become {}: {}", u.name, e.name());
                return 1;
            }
            let e = sys::exec_shell(&u, true, None);
            eprintln!("login: {}: {}", u.shell, e.name());
            return 1;
        }
        eprintln!("Login incorrect");
    }
    1
}
