//! The builtins the interpreter runs itself (XCU 2.14 and the regular
//! builtins a script relies on): `:`, `true`, `false`, `echo`, `printf`,
//! `test`/`[`, `set`, `shift`, `exit`, `return`, `break`, `continue`, `.`,
//! `eval`, `exec`, `read`, `export`, `unset`, and `ulimit` (its own room,
//! `ulimit`).
//!
//! What it is not: the builtins that need the process (`cd`, `pwd`,
//! `jobs`, `wait`, `umask`), which the host runs.
//!
//! Invariants: every output goes through [`Shell::out`], so a failed write
//! is reported and gives status 1; a usage error gives status 2.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::state::{
    Expanded, Flow, Host, OPTION_NAMES, STATUS_NOT_FOUND, STATUS_USAGE, Shell, SignalAction, TRAP_SIGNALS,
};
use super::syntax::is_valid_name;

const BUILTINS: [&str; 28] = [
    ":", "true", "false", "echo", "printf", "test", "[", "set", "shift", "exit", "return", "break",
    "continue", ".", "eval", "exec", "read", "export", "unset", "trap", "umask", "command", "type",
    "readonly", "local", "getopts", "hash", "ulimit",
];

/// Standard builtins this shell does not implement yet: each says so by
/// name (status 2) rather than being looked for as a program.
const UNSUPPORTED: [&str; 4] = ["alias", "unalias", "fc", "times"];

/// Is `name` run by the interpreter itself?
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name) || UNSUPPORTED.contains(&name)
}

/// Special builtins (XCU 2.14): their assignments stay after them.
pub fn is_special(name: &str) -> bool {
    matches!(
        name,
        ":" | "."
            | "break"
            | "continue"
            | "eval"
            | "exec"
            | "exit"
            | "export"
            | "readonly"
            | "return"
            | "set"
            | "shift"
            | "times"
            | "trap"
            | "unset"
            | "local"
    )
}

/// `s` quoted for the shell when it needs it (`set`, `export -p`, `-x`).
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "_-./=:,+@%".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

pub fn run<H: Host>(sh: &mut Shell, h: &mut H, argv: &[String], cmd: &Expanded) -> i32 {
    let name = argv[0].as_str();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    match name {
        ":" | "true" => 0,
        "false" => 1,
        "echo" => echo(sh, h, &args),
        "printf" => printf(sh, h, &args),
        "test" => test_builtin(sh, h, "test", &args),
        "[" => match args.split_last() {
            Some((&"]", rest)) => test_builtin(sh, h, "[", rest),
            _ => {
                sh.error(h, "[: missing ]");
                STATUS_USAGE
            }
        },
        "set" => set(sh, h, &args),
        "shift" => {
            let n = match args.first().map(|a| a.parse::<usize>()) {
                None => 1,
                Some(Ok(n)) => n,
                Some(Err(_)) => {
                    sh.error(h, &format!("shift: {}: bad number", args[0]));
                    return STATUS_USAGE;
                }
            };
            if n > sh.params.len() {
                sh.error(h, "shift: can't shift that many");
                // A special builtin's error ends a script (XCU 2.8.1).
                if !sh.interactive {
                    sh.exit_code = Some(STATUS_USAGE);
                }
                return STATUS_USAGE;
            }
            sh.params.drain(..n);
            0
        }
        "exit" => {
            let code = match args.first() {
                None => sh.status,
                Some(n) => match n.parse::<i64>() {
                    Ok(n) => (n & 0xff) as i32,
                    Err(_) => {
                        sh.error(h, &format!("exit: {n}: numeric argument required"));
                        STATUS_USAGE
                    }
                },
            };
            sh.exit_code = Some(code);
            code
        }
        "return" => {
            let code = match args.first() {
                None => sh.status,
                Some(n) => match n.parse::<i64>() {
                    Ok(n) => (n & 0xff) as i32,
                    Err(_) => {
                        sh.error(h, &format!("return: {n}: bad number"));
                        return STATUS_USAGE;
                    }
                },
            };
            if sh.call_depth() == 0 {
                // Outside a function or `.` script: like `exit`, as dash.
                sh.exit_code = Some(code);
                return code;
            }
            sh.status = code;
            sh.flow = Flow::Return;
            code
        }
        "break" | "continue" => {
            let n = match args.first().map(|a| a.parse::<u32>()) {
                None => 1,
                Some(Ok(n)) if n > 0 => n,
                _ => {
                    sh.error(h, &format!("{name}: {}: bad number", args[0]));
                    return STATUS_USAGE;
                }
            };
            let depth = sh.loop_depth();
            if depth == 0 {
                // dash ignores them outside a loop.
                return 0;
            }
            let n = n.min(depth);
            sh.flow = if name == "break" { Flow::Break(n) } else { Flow::Continue(n) };
            0
        }
        "." => {
            let Some(file) = args.first() else {
                sh.error(h, ".: a file name is required");
                return STATUS_USAGE;
            };
            let path = if file.contains('/') {
                Some(file.to_string())
            } else {
                let path = sh.var("PATH").unwrap_or_else(|| "/bin".to_string());
                path.split(':')
                    .map(|d| format!("{}/{}", if d.is_empty() { "." } else { d.trim_end_matches('/') }, file))
                    .find(|p| h.stat(p).is_some_and(|s| s.is_regular))
            };
            let text = match path.as_deref().map(|p| h.read_file(p)) {
                Some(Ok(t)) => t,
                Some(Err(e)) => {
                    sh.error(h, &format!(".: {file}: {e}"));
                    sh.exit_code = (!sh.interactive).then_some(STATUS_USAGE);
                    return STATUS_USAGE;
                }
                None => {
                    sh.error(h, &format!(".: {file}: not found"));
                    sh.exit_code = (!sh.interactive).then_some(STATUS_USAGE);
                    return STATUS_USAGE;
                }
            };
            sh.dot(h, &text)
        }
        "eval" => {
            let text = args.join(" ");
            sh.status = 0;
            sh.run_text(h, &text)
        }
        "exec" => {
            let rest = Expanded {
                assignments: cmd.assignments.clone(),
                argv: argv[1..].to_vec(),
                redirections: Vec::new(),
            };
            h.exec(sh, &rest)
        }
        "read" => read(sh, h, &args),
        "export" | "readonly" => export(sh, h, name, &args),
        "unset" => {
            let functions = args.contains(&"-f");
            for n in args.iter().filter(|a| !a.starts_with('-')) {
                if functions {
                    sh.functions.remove(*n);
                    continue;
                }
                if sh.readonly.contains(*n) {
                    sh.error(h, &format!("unset: {n}: is read only"));
                    if !sh.interactive {
                        sh.exit_code = Some(STATUS_USAGE);
                    }
                    return STATUS_USAGE;
                }
                sh.vars.remove(*n);
                sh.exported.remove(*n);
            }
            0
        }
        "trap" => trap(sh, h, &args),
        "umask" => umask(sh, h, &args),
        "ulimit" => super::ulimit::ulimit(sh, h, &args),
        "command" | "type" => describe(sh, h, name, &args),
        "local" => local(sh, h, &args),
        "getopts" => getopts(sh, h, &args),
        "hash" => {
            let mut status = 0;
            for n in args.iter().filter(|a| !a.starts_with('-')) {
                if find_command(sh, h, n).is_none() {
                    sh.error(h, &format!("hash: {n}: not found"));
                    status = 1;
                }
            }
            status
        }
        _ if UNSUPPORTED.contains(&name) => {
            sh.error(h, &format!("{name}: not supported by this shell yet"));
            STATUS_USAGE
        }
        _ => {
            sh.error(h, &format!("{name}: not a builtin"));
            1
        }
    }
}

fn echo<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    // dash's echo: `-n` only, and the escapes of XSI.
    let (newline, args) = match args.first() {
        Some(&"-n") => (false, &args[1..]),
        _ => (true, args),
    };
    let mut out = String::new();
    let mut stop = false;
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        if escapes(a, &mut out, false) {
            stop = true;
            break;
        }
    }
    if newline && !stop {
        out.push('\n');
    }
    match sh.out(h, "echo", &out) {
        Ok(()) => 0,
        Err(s) => s,
    }
}

/// Backslash escapes of `echo` and `printf %b` (and of a `printf` format
/// when `format`); true when `\c` says to stop all output.
fn escapes(s: &str, out: &mut String, format: bool) -> bool {
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('a') => out.push('\x07'),
            Some('b') => out.push('\x08'),
            Some('f') => out.push('\x0c'),
            Some('v') => out.push('\x0b'),
            Some('\\') => out.push('\\'),
            Some('c') if !format => return true,
            Some(d @ '0'..='7') => {
                // `\0nnn` for echo/%b, `\nnn` in a printf format.
                let mut v = if format { d as u32 - '0' as u32 } else { 0 };
                let max = if format { 2 } else { 3 };
                if !format && d != '0' {
                    v = d as u32 - '0' as u32;
                }
                for _ in 0..max {
                    match chars.peek() {
                        Some(&o @ '0'..='7') => {
                            v = v * 8 + (o as u32 - '0' as u32);
                            chars.next();
                        }
                        _ => break,
                    }
                }
                out.push(char::from_u32(v & 0xff).unwrap_or('?'));
            }
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    false
}

fn printf<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    // `printf -- format …`: the `--` ends options (there are none).
    let args = if args.first() == Some(&"--") { &args[1..] } else { args };
    let Some((format, mut rest)) = args.split_first() else {
        sh.error(h, "printf: usage: printf format [arguments]");
        return STATUS_USAGE;
    };
    let mut out = String::new();
    let mut status = 0;
    loop {
        let before = rest.len();
        let (stop, problems) = printf_once(format, &mut rest, &mut out);
        for p in problems {
            sh.error(h, &format!("printf: {p}"));
            status = 1;
        }
        if stop || rest.is_empty() || rest.len() == before {
            break;
        }
    }
    match sh.out(h, "printf", &out) {
        Ok(()) => status,
        Err(s) => s,
    }
}

/// One pass over `format`; true when `\c` stopped the output.
fn printf_once(format: &str, args: &mut &[&str], out: &mut String) -> (bool, Vec<String>) {
    let mut problems = Vec::new();
    let mut next = || -> Option<&str> {
        let (first, rest) = args.split_first()?;
        *args = rest;
        Some(first)
    };
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            let mut j = i + 1;
            while j < chars.len()
                && j < i + 4
                && (j == i + 1 || chars[i + 1].is_digit(8) && chars[j].is_digit(8))
            {
                j += 1;
            }
            let seq: String = chars[i..j].iter().collect();
            escapes(&seq, out, true);
            i = j;
            continue;
        }
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        i += 1;
        if chars.get(i) == Some(&'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let mut flags = String::new();
        while let Some(&f) = chars.get(i).filter(|c| "-+ #0".contains(**c)) {
            flags.push(f);
            i += 1;
        }
        let mut width = String::new();
        while let Some(&d) = chars.get(i).filter(|c| c.is_ascii_digit() || **c == '*') {
            width.push(d);
            i += 1;
        }
        let mut precision: Option<String> = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let mut p = String::new();
            while let Some(&d) = chars.get(i).filter(|c| c.is_ascii_digit()) {
                p.push(d);
                i += 1;
            }
            precision = Some(p);
        }
        let Some(&conv) = chars.get(i) else {
            problems.push("missing format character".to_string());
            break;
        };
        i += 1;
        let width: usize = if width == "*" {
            next().and_then(|a| a.parse().ok()).unwrap_or(0)
        } else {
            width.parse().unwrap_or(0)
        };
        let precision: Option<usize> = precision.map(|p| p.parse().unwrap_or(0));
        let left = flags.contains('-');
        let body = match conv {
            's' => {
                let mut s = next().unwrap_or("").to_string();
                if let Some(p) = precision {
                    s = s.chars().take(p).collect();
                }
                s
            }
            'b' => {
                let mut s = String::new();
                if escapes(next().unwrap_or(""), &mut s, false) {
                    pad(out, &s, width, left, false);
                    return (true, problems);
                }
                s
            }
            'c' => next().and_then(|a| a.chars().next()).map(String::from).unwrap_or_default(),
            'd' | 'i' | 'u' | 'x' | 'X' | 'o' => {
                let arg = next().unwrap_or("0");
                let n = match printf_number(arg) {
                    Ok(n) => n,
                    Err(n) => {
                        problems.push(format!("{arg}: not completely converted"));
                        n
                    }
                };
                let mut digits = match conv {
                    'x' => format!("{:x}", n),
                    'X' => format!("{:X}", n),
                    'o' => format!("{:o}", n),
                    'u' => format!("{}", n as u64),
                    _ => format!("{}", n.unsigned_abs()),
                };
                if let Some(p) = precision {
                    while digits.len() < p {
                        digits.insert(0, '0');
                    }
                }
                // `#`: the alternative form, `0x`/`0X` before a hexadecimal
                // number other than 0, a leading 0 for octal.
                if flags.contains('#') && n != 0 {
                    match conv {
                        'x' => digits.insert_str(0, "0x"),
                        'X' => digits.insert_str(0, "0X"),
                        'o' if !digits.starts_with('0') => digits.insert(0, '0'),
                        _ => {}
                    }
                }
                let sign = if matches!(conv, 'd' | 'i') {
                    if n < 0 {
                        "-"
                    } else if flags.contains('+') {
                        "+"
                    } else if flags.contains(' ') {
                        " "
                    } else {
                        ""
                    }
                } else {
                    ""
                };
                if flags.contains('0') && !left && precision.is_none() {
                    while digits.len() + sign.len() < width {
                        digits.insert(0, '0');
                    }
                }
                format!("{sign}{digits}")
            }
            other => {
                problems.push(format!("%{other}: invalid directive"));
                continue;
            }
        };
        pad(out, &body, width, left, false);
    }
    (false, problems)
}

fn pad(out: &mut String, s: &str, width: usize, left: bool, _zero: bool) {
    let n = s.chars().count();
    if !left {
        out.extend(core::iter::repeat_n(' ', width.saturating_sub(n)));
    }
    out.push_str(s);
    if left {
        out.extend(core::iter::repeat_n(' ', width.saturating_sub(n)));
    }
}

/// A `printf` numeric argument: a C constant, or `'c` for a character's
/// code; empty is 0. `Err` holds the value of the longest prefix that is
/// a number, when the rest is not (dash prints it and fails).
fn printf_number(a: &str) -> Result<i64, i64> {
    if let Some(rest) = a.strip_prefix('\'').or_else(|| a.strip_prefix('"')) {
        return Ok(rest.chars().next().map_or(0, |c| c as i64));
    }
    let t = a.trim_start();
    let (neg, d) = match t.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let (radix, digits) = if let Some(hex) = d.strip_prefix("0x").or_else(|| d.strip_prefix("0X")) {
        (16, hex)
    } else if d.len() > 1 && d.starts_with('0') {
        (8, &d[1..])
    } else {
        (10, d)
    };
    let mut v: i64 = 0;
    let mut used = 0;
    for c in digits.chars() {
        let Some(x) = c.to_digit(radix) else { break };
        v = v.wrapping_mul(i64::from(radix)).wrapping_add(i64::from(x));
        used += 1;
    }
    let v = if neg { v.wrapping_neg() } else { v };
    if used == digits.len() && (used > 0 || a.is_empty() || radix == 8) { Ok(v) } else { Err(v) }
}

fn set<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    if args.is_empty() {
        let mut text = String::new();
        for (n, v) in &sh.vars {
            text.push_str(&format!("{n}={}\n", quote_always(v)));
        }
        return match sh.out(h, "set", &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    }
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "--" {
            i += 1;
            sh.params = args[i..].iter().map(|s| s.to_string()).collect();
            return 0;
        }
        let (on, flags) = match (a.strip_prefix('-'), a.strip_prefix('+')) {
            (Some(f), _) if !f.is_empty() => (true, f),
            (_, Some(f)) if !f.is_empty() => (false, f),
            (Some(_), _) => {
                // `set -`: turn off -x and -v, the rest are parameters.
                sh.options.xtrace = false;
                sh.options.verbose = false;
                i += 1;
                break;
            }
            _ => break,
        };
        for f in flags.chars() {
            if f == 'o' {
                // `-o name`, or `-o`/`+o` alone: list the settings.
                match args.get(i + 1) {
                    Some(opt) => {
                        i += 1;
                        if let Err(status) = set_named_option(sh, h, on, opt) {
                            return status;
                        }
                    }
                    None => return list_options(sh, h, on),
                }
                continue;
            }
            match sh.options.flag(f) {
                Some(setting) => *setting = on,
                None => {
                    sh.error(h, &format!("set: Illegal option {}{f}", if on { '-' } else { '+' }));
                    return set_failed(sh);
                }
            }
        }
        i += 1;
    }
    if i < args.len() {
        sh.params = args[i..].iter().map(|s| s.to_string()).collect();
    }
    0
}

/// A usage error of `set`, a special builtin: it ends a script.
fn set_failed(sh: &mut Shell) -> i32 {
    if !sh.interactive {
        sh.exit_code = Some(STATUS_USAGE);
    }
    STATUS_USAGE
}

/// `set -o name` / `set +o name`.
fn set_named_option<H: Host>(sh: &mut Shell, h: &mut H, on: bool, opt: &str) -> Result<(), i32> {
    let Some(&(_, letter)) = OPTION_NAMES.iter().find(|(n, _)| *n == opt) else {
        sh.error(h, &format!("set: Illegal option -o {opt}"));
        return Err(set_failed(sh));
    };
    match letter.and_then(|c| sh.options.flag(c)) {
        Some(setting) => *setting = on,
        // Options this shell does not act on are off, and stay so.
        None if !on => {}
        None => {
            sh.error(h, &format!("set: -o {opt}: not supported by this shell"));
            return Err(set_failed(sh));
        }
    }
    Ok(())
}

/// `set -o` (a table) or `set +o` (commands), as dash prints them.
fn list_options<H: Host>(sh: &mut Shell, h: &mut H, table: bool) -> i32 {
    let mut text = String::new();
    if table {
        text.push_str("Current option settings\n");
    }
    for (name, letter) in OPTION_NAMES {
        let on = letter.and_then(|c| sh.options.flag(c).map(|s| *s)).unwrap_or(false);
        if table {
            text.push_str(&format!("{name:<16}{}\n", if on { "on" } else { "off" }));
        } else {
            text.push_str(&format!("set {}o {name}\n", if on { '-' } else { '+' }));
        }
    }
    match sh.out(h, "set", &text) {
        Ok(()) => 0,
        Err(s) => s,
    }
}

fn export<H: Host>(sh: &mut Shell, h: &mut H, name: &str, args: &[&str]) -> i32 {
    let args: Vec<&str> = args.iter().copied().filter(|a| *a != "-p").collect();
    if args.is_empty() {
        // As dash: `export NAME='value'`, or `export NAME` when unset.
        let names = if name == "export" { &sh.exported } else { &sh.readonly };
        let mut text = String::new();
        for n in names {
            match sh.vars.get(n) {
                Some(v) => text.push_str(&format!("{name} {n}={}\n", quote_always(v))),
                None => text.push_str(&format!("{name} {n}\n")),
            }
        }
        return match sh.out(h, name, &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    }
    let mut status = 0;
    for arg in args {
        let (n, value) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (arg, None),
        };
        if !is_valid_name(n) {
            sh.error(h, &format!("{name}: {arg}: bad variable name"));
            status = 1;
            continue;
        }
        if let Some(v) = value
            && let Err(e) = sh.assign(n, v)
        {
            sh.error(h, &format!("{name}: {e}"));
            if !sh.interactive {
                sh.exit_code = Some(STATUS_USAGE);
            }
            return STATUS_USAGE;
        }
        if name == "export" {
            sh.exported.insert(n.to_string());
        } else {
            sh.readonly.insert(n.to_string());
        }
    }
    status
}

/// `read [-r] name…`: one line of standard input, split at `$IFS`.
fn read<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    let raw = args.first() == Some(&"-r");
    let names: Vec<&str> = args.iter().copied().filter(|a| *a != "-r").collect();
    if names.is_empty() {
        sh.error(h, "read: arg count");
        return STATUS_USAGE;
    }
    if let Some(bad) = names.iter().find(|n| !is_valid_name(n)) {
        sh.error(h, &format!("read: {bad}: bad variable name"));
        return STATUS_USAGE;
    }
    // One byte at a time: what follows the line stays for the next reader.
    let mut line: Vec<(char, bool)> = Vec::new();
    let mut bytes = Vec::new();
    let mut eof = false;
    let mut escaped = false;
    loop {
        let mut b = [0u8; 1];
        match h.read(0, &mut b) {
            Ok(0) => {
                eof = true;
                break;
            }
            Ok(_) => {}
            Err(e) => {
                sh.error(h, &format!("read: {e}"));
                return 1;
            }
        }
        bytes.push(b[0]);
        let Ok(text) = core::str::from_utf8(&bytes) else {
            if bytes.len() < 4 {
                continue;
            }
            bytes.clear();
            continue;
        };
        let c = text.chars().next().unwrap_or('\u{fffd}');
        bytes.clear();
        if escaped {
            escaped = false;
            if c != '\n' {
                line.push((c, true));
            }
            continue;
        }
        match c {
            '\n' => break,
            '\\' if !raw => escaped = true,
            c => line.push((c, false)),
        }
    }
    let ifs = sh.var("IFS").unwrap_or_else(|| " \t\n".to_string());
    let is_sep = |c: char, q: bool| !q && ifs.contains(c);
    let is_white = |c: char| c == ' ' || c == '\t' || c == '\n';
    // Leading IFS white space is dropped; each name but the last takes a
    // field; the last takes the rest, trailing IFS white space removed.
    let mut i = 0;
    while i < line.len() && is_sep(line[i].0, line[i].1) && is_white(line[i].0) {
        i += 1;
    }
    for (k, name) in names.iter().enumerate() {
        let last = k + 1 == names.len();
        let mut value = String::new();
        if last {
            let mut end = line.len();
            while end > i && is_sep(line[end - 1].0, line[end - 1].1) && is_white(line[end - 1].0) {
                end -= 1;
            }
            value.extend(line[i..end].iter().map(|(c, _)| *c));
            i = line.len();
        } else {
            while i < line.len() && !is_sep(line[i].0, line[i].1) {
                value.push(line[i].0);
                i += 1;
            }
            // Skip the delimiter: white space, at most one other IFS
            // character, white space.
            while i < line.len() && is_sep(line[i].0, line[i].1) && is_white(line[i].0) {
                i += 1;
            }
            if i < line.len() && is_sep(line[i].0, line[i].1) {
                i += 1;
                while i < line.len() && is_sep(line[i].0, line[i].1) && is_white(line[i].0) {
                    i += 1;
                }
            }
        }
        if let Err(e) = sh.assign(name, &value) {
            sh.error(h, &format!("read: {e}"));
            return STATUS_USAGE;
        }
    }
    if eof { 1 } else { 0 }
}

fn test_builtin<H: Host>(sh: &mut Shell, h: &mut H, name: &str, args: &[&str]) -> i32 {
    let mut t = Test { args, i: 0, h };
    match t.expr() {
        Ok(v) if t.i == args.len() => (!v) as i32,
        Ok(_) => {
            let extra = args[t.i];
            sh.error(h_of(&mut t), &format!("{name}: {extra}: unexpected operator"));
            STATUS_USAGE
        }
        Err(e) => {
            sh.error(h_of(&mut t), &format!("{name}: {e}"));
            STATUS_USAGE
        }
    }
}

fn h_of<'a, H: Host>(t: &'a mut Test<'_, '_, H>) -> &'a mut H {
    t.h
}

/// `test`'s expression (XCU `test`), by recursive descent: `-o` below
/// `-a` below `!` below primaries and `( … )`.
struct Test<'a, 'h, H> {
    args: &'a [&'a str],
    i: usize,
    h: &'h mut H,
}

impl<'a, H: Host> Test<'a, '_, H> {
    fn peek(&self, k: usize) -> Option<&'a str> {
        self.args.get(self.i + k).copied()
    }

    fn expr(&mut self) -> Result<bool, String> {
        // POSIX's rules by argument count for the short, ambiguous forms.
        let n = self.args.len() - self.i;
        if n == 0 {
            return Ok(false);
        }
        if n == 1 {
            self.i += 1;
            return Ok(!self.args[self.i - 1].is_empty());
        }
        self.or()
    }

    fn or(&mut self) -> Result<bool, String> {
        let mut v = self.and()?;
        while self.peek(0) == Some("-o") {
            self.i += 1;
            let r = self.and()?;
            v = v || r;
        }
        Ok(v)
    }

    fn and(&mut self) -> Result<bool, String> {
        let mut v = self.not()?;
        while self.peek(0) == Some("-a") {
            self.i += 1;
            let r = self.not()?;
            v = v && r;
        }
        Ok(v)
    }

    fn not(&mut self) -> Result<bool, String> {
        if self.peek(0) == Some("!") && self.peek(1).is_some() {
            self.i += 1;
            return Ok(!self.not()?);
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<bool, String> {
        let Some(a) = self.peek(0) else { return Err("argument expected".to_string()) };
        if a == "(" && self.peek(2) == Some(")")
            || a == "(" && self.peek(1).is_some() && !is_binary(self.peek(1).unwrap_or(""))
        {
            self.i += 1;
            let v = self.or()?;
            if self.peek(0) != Some(")") {
                return Err("closing paren expected".to_string());
            }
            self.i += 1;
            return Ok(v);
        }
        if let Some(op) = self.peek(1)
            && is_binary(op)
            && self.peek(2).is_some()
        {
            let b = self.peek(2).unwrap_or("");
            self.i += 3;
            return binary(a, op, b);
        }
        if a.len() == 2 && a.starts_with('-') && self.peek(1).is_some() && a != "-a" && a != "-o" {
            let operand = self.peek(1).unwrap_or("");
            self.i += 2;
            return self.unary(a, operand);
        }
        self.i += 1;
        Ok(!a.is_empty())
    }

    fn unary(&mut self, op: &str, x: &str) -> Result<bool, String> {
        Ok(match op {
            "-n" => !x.is_empty(),
            "-z" => x.is_empty(),
            "-e" => self.h.stat(x).is_some(),
            "-f" => self.h.stat(x).is_some_and(|s| s.is_regular),
            "-d" => self.h.stat(x).is_some_and(|s| s.is_dir),
            "-s" => self.h.stat(x).is_some_and(|s| s.size_bytes > 0),
            "-r" => self.h.stat(x).is_some_and(|s| s.mode & 0o444 != 0),
            "-w" => self.h.stat(x).is_some_and(|s| s.mode & 0o222 != 0),
            "-x" => self.h.stat(x).is_some_and(|s| s.mode & 0o111 != 0),
            _ => return Err(format!("{op}: unexpected operator")),
        })
    }
}

fn is_binary(op: &str) -> bool {
    matches!(op, "=" | "!=" | "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge")
}

fn binary(a: &str, op: &str, b: &str) -> Result<bool, String> {
    match op {
        "=" => return Ok(a == b),
        "!=" => return Ok(a != b),
        _ => {}
    }
    let num = |s: &str| s.trim().parse::<i64>().map_err(|_| format!("{s}: bad number"));
    let (x, y) = (num(a)?, num(b)?);
    Ok(match op {
        "-eq" => x == y,
        "-ne" => x != y,
        "-lt" => x < y,
        "-le" => x <= y,
        "-gt" => x > y,
        _ => x >= y,
    })
}

/// A `trap` condition: `EXIT`, `0`, a signal's name (with or without
/// `SIG`) or number.
fn trap_condition(arg: &str) -> Option<u32> {
    if let Ok(n) = arg.parse::<u32>() {
        return (n <= 31).then_some(n);
    }
    let name = arg.strip_prefix("SIG").unwrap_or(arg);
    TRAP_SIGNALS.iter().find(|(n, _)| *n == name).map(|&(_, number)| number)
}

/// A signal number's name for `trap`'s listing.
fn trap_name(sig: u32) -> String {
    TRAP_SIGNALS.iter().find(|(_, n)| *n == sig).map_or_else(|| format!("{sig}"), |(n, _)| n.to_string())
}

/// `trap [action condition…]` (XCU 2.14 `trap`): without operands, the
/// traps set, as commands that would set them again.
fn trap<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    let args = match args.first() {
        Some(&"--") => &args[1..],
        _ => args,
    };
    if args.is_empty() {
        let text: String = sh
            .traps
            .iter()
            .map(|(sig, cmd)| format!("trap -- {} {}\n", quote_always(cmd), trap_name(*sig)))
            .collect();
        return match sh.out(h, "trap", &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    }
    // One operand, or a first operand that is a condition number: the
    // conditions are reset (POSIX).
    let (action, conditions) = if args.len() == 1 || args[0].parse::<u32>().is_ok() {
        (None, args)
    } else {
        (Some(args[0]).filter(|a| *a != "-"), &args[1..])
    };
    let mut status = 0;
    for c in conditions {
        let Some(sig) = trap_condition(c) else {
            sh.error(h, &format!("trap: {c}: bad trap"));
            status = 1;
            continue;
        };
        if sig != 0 {
            let what = match action {
                None => SignalAction::Default,
                Some("") => SignalAction::Ignore,
                Some(_) => SignalAction::Catch,
            };
            if let Err(e) = h.signal_action(sig, what) {
                sh.error(h, &format!("trap: {c}: {e}"));
                status = 1;
                continue;
            }
        }
        match action {
            None => sh.traps.remove(&sig),
            Some(a) => sh.traps.insert(sig, a.to_string()),
        };
    }
    status
}

/// `s` in single quotes, always (`trap`'s listing, as dash).
fn quote_always(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `umask [-S] [mask]`: octal or symbolic (`u=rwx,g=rx,o=`, `a-w`, `g+w`).
fn umask<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    let symbolic = args.first() == Some(&"-S");
    let args = if symbolic { &args[1..] } else { args };
    let Some(spec) = args.first() else {
        let mask = h.umask(None);
        let text = if symbolic {
            let allowed = !mask & 0o777;
            let who = |shift: u32| {
                let bits = (allowed >> shift) & 7;
                let mut s = String::new();
                for (bit, c) in [(4, 'r'), (2, 'w'), (1, 'x')] {
                    if bits & bit != 0 {
                        s.push(c);
                    }
                }
                s
            };
            format!("u={},g={},o={}\n", who(6), who(3), who(0))
        } else {
            format!("{mask:04o}\n")
        };
        return match sh.out(h, "umask", &text) {
            Ok(()) => 0,
            Err(s) => s,
        };
    };
    let new = if spec.bytes().next().is_some_and(|b| b.is_ascii_digit()) {
        match u32::from_str_radix(spec, 8) {
            Ok(m) if m <= 0o777 => m,
            _ => {
                sh.error(h, &format!("umask: Illegal number: {spec}"));
                return STATUS_USAGE;
            }
        }
    } else {
        let old = h.umask(None);
        match symbolic_mask(old, spec) {
            Some(m) => m,
            None => {
                sh.error(h, &format!("umask: Illegal mode: {spec}"));
                return STATUS_USAGE;
            }
        }
    };
    h.umask(Some(new));
    0
}

/// A symbolic mode (`chmod`'s `[ugoa]*[+-=][rwx]*`, comma-separated)
/// applied to the permissions `mask` allows: the new mask.
fn symbolic_mask(mask: u32, spec: &str) -> Option<u32> {
    let mut allowed = !mask & 0o777;
    for clause in spec.split(',') {
        let op_at = clause.find(['+', '-', '='])?;
        let (who, rest) = clause.split_at(op_at);
        let mut who_bits = 0;
        for c in who.chars() {
            who_bits |= match c {
                'u' => 0o700,
                'g' => 0o070,
                'o' => 0o007,
                'a' => 0o777,
                _ => return None,
            };
        }
        if who.is_empty() {
            who_bits = 0o777;
        }
        let mut chars = rest.chars();
        let op = chars.next()?;
        let mut perm = 0;
        for c in chars {
            perm |= match c {
                'r' => 0o444,
                'w' => 0o222,
                'x' => 0o111,
                _ => return None,
            };
        }
        let perm = perm & who_bits;
        match op {
            '+' => allowed |= perm,
            '-' => allowed &= !perm,
            _ => allowed = (allowed & !who_bits) | perm,
        }
    }
    Some(!allowed & 0o777)
}

/// What a command name is, for `command -v/-V` and `type`.
pub(super) enum Found {
    Keyword,
    Function,
    Special,
    Builtin,
    Path(String),
}

/// Look `name` up as the shell would run it; `None`: not found.
pub(super) fn find_command<H: Host>(sh: &Shell, h: &mut H, name: &str) -> Option<Found> {
    if super::syntax::KEYWORDS.contains(&name) {
        return Some(Found::Keyword);
    }
    if sh.functions.contains_key(name) {
        return Some(Found::Function);
    }
    if is_builtin(name) && !UNSUPPORTED.contains(&name) {
        return Some(if is_special(name) { Found::Special } else { Found::Builtin });
    }
    if h.is_host_builtin(name) {
        return Some(Found::Builtin);
    }
    let executable = |h: &mut H, p: &str| h.stat(p).is_some_and(|s| s.is_regular && s.mode & 0o111 != 0);
    if name.contains('/') {
        return executable(h, name).then(|| Found::Path(name.to_string()));
    }
    let path = sh.var("PATH").unwrap_or_else(|| "/bin".to_string());
    path.split(':')
        .map(|d| format!("{}/{}", if d.is_empty() { "." } else { d.trim_end_matches('/') }, name))
        .find(|p| executable(h, p))
        .map(Found::Path)
}

/// `command -v|-V name…` and `type name…` (running `command name …` is
/// the interpreter's).
fn describe<H: Host>(sh: &mut Shell, h: &mut H, name: &str, args: &[&str]) -> i32 {
    let mut verbose = name == "type";
    let mut names = args;
    if name == "command" {
        let mut brief = false;
        while let Some(opt) = names.first().filter(|a| a.starts_with('-') && a.len() > 1) {
            if *opt == "--" {
                names = &names[1..];
                break;
            }
            for c in opt[1..].chars() {
                match c {
                    'v' => brief = true,
                    'V' => verbose = true,
                    'p' => {}
                    other => {
                        sh.error(h, &format!("command: -{other}: bad option"));
                        return STATUS_USAGE;
                    }
                }
            }
            names = &names[1..];
        }
        if !brief && !verbose {
            // `command` alone does nothing.
            return 0;
        }
    }
    let mut text = String::new();
    let mut status = 0;
    for n in names {
        let line = match find_command(sh, h, n) {
            None => {
                status = STATUS_NOT_FOUND;
                if verbose {
                    text.push_str(&format!("{n}: not found\n"));
                }
                continue;
            }
            Some(Found::Path(p)) if verbose => format!("{n} is {p}"),
            Some(Found::Path(p)) => p,
            Some(_) if !verbose => n.to_string(),
            Some(Found::Keyword) => format!("{n} is a shell keyword"),
            Some(Found::Function) => format!("{n} is a shell function"),
            Some(Found::Special) => format!("{n} is a special shell builtin"),
            Some(Found::Builtin) => format!("{n} is a shell builtin"),
        };
        text.push_str(&line);
        text.push('\n');
    }
    match sh.out(h, name, &text) {
        Ok(()) => status,
        Err(s) => s,
    }
}

/// `local name[=value]…` (dash's, not POSIX's): the variables are the
/// function's own until it returns; without a value one keeps the value
/// it had.
fn local<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    if sh.locals.is_empty() {
        sh.error(h, "local: not in a function");
        if !sh.interactive {
            sh.exit_code = Some(STATUS_USAGE);
        }
        return STATUS_USAGE;
    }
    for arg in args {
        let (n, value) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (*arg, None),
        };
        if !is_valid_name(n) {
            sh.error(h, &format!("local: {arg}: bad variable name"));
            return STATUS_USAGE;
        }
        let old = sh.vars.get(n).cloned();
        let exported = sh.exported.contains(n);
        let frame = sh.locals.last_mut().expect("in a function");
        if !frame.iter().any(|(name, _, _)| name == n) {
            frame.push((n.to_string(), old, exported));
        }
        if let Some(v) = value
            && let Err(e) = sh.assign(n, v)
        {
            sh.error(h, &format!("local: {e}"));
            return STATUS_USAGE;
        }
    }
    0
}

/// `getopts optstring name [arg…]` (XCU `getopts`): the next option of
/// the arguments (the positional parameters without any) in `name`,
/// its argument in `OPTARG`, the next argument's index in `OPTIND`.
fn getopts<H: Host>(sh: &mut Shell, h: &mut H, args: &[&str]) -> i32 {
    let [optstring, name, rest @ ..] = args else {
        sh.error(h, "getopts: usage: getopts optstring var [arg...]");
        return STATUS_USAGE;
    };
    if !is_valid_name(name) {
        sh.error(h, &format!("getopts: {name}: bad variable name"));
        return STATUS_USAGE;
    }
    let operands: Vec<String> =
        if rest.is_empty() { sh.params.clone() } else { rest.iter().map(|s| s.to_string()).collect() };
    let optind_text = sh.var("OPTIND").unwrap_or_else(|| "1".to_string());
    // A script that sets OPTIND itself (`OPTIND=1`) starts over.
    if sh.getopts_last.as_deref() != Some(optind_text.as_str()) {
        sh.optchar = 0;
    }
    let mut optind = optind_text.trim().parse::<usize>().unwrap_or(1).max(1);
    // The arguments may have changed since the last call (`set --`).
    if operands.get(optind - 1).is_none_or(|a| sh.optchar >= a.chars().count()) {
        sh.optchar = 0;
    }
    let silent = optstring.starts_with(':');
    let set_optind = |sh: &mut Shell, optind: usize| {
        let text = format!("{optind}");
        sh.set_var("OPTIND", &text);
        sh.getopts_last = Some(text);
    };
    if sh.optchar == 0 {
        let arg = operands.get(optind - 1).map(String::as_str);
        match arg {
            Some("--") => {
                set_optind(sh, optind + 1);
                let _ = sh.assign(name, "?");
                sh.vars.remove("OPTARG");
                return 1;
            }
            Some(a) if a.starts_with('-') && a.len() > 1 => sh.optchar = 1,
            _ => {
                set_optind(sh, optind);
                let _ = sh.assign(name, "?");
                sh.vars.remove("OPTARG");
                return 1;
            }
        }
    }
    let arg: Vec<char> = operands[optind - 1].chars().collect();
    let c = arg[sh.optchar];
    sh.optchar += 1;
    let rest_of_arg: String = arg[sh.optchar..].iter().collect();
    if sh.optchar >= arg.len() {
        sh.optchar = 0;
        optind += 1;
    }
    let spec = optstring.trim_start_matches(':');
    let Some(at) = spec.find(c).filter(|_| c != ':') else {
        if silent {
            sh.set_var("OPTARG", &c.to_string());
        } else {
            sh.vars.remove("OPTARG");
            sh.error(h, &format!("Illegal option -{c}"));
        }
        set_optind(sh, optind);
        return assign_status(sh, h, name, "?");
    };
    if spec[at + c.len_utf8()..].starts_with(':') {
        let value = if !rest_of_arg.is_empty() && sh.optchar != 0 {
            sh.optchar = 0;
            optind += 1;
            Some(rest_of_arg)
        } else if let Some(next) = operands.get(optind - 1) {
            optind += 1;
            Some(next.clone())
        } else {
            None
        };
        set_optind(sh, optind);
        let Some(value) = value else {
            if silent {
                sh.set_var("OPTARG", &c.to_string());
                return assign_status(sh, h, name, ":");
            }
            sh.vars.remove("OPTARG");
            sh.error(h, &format!("No arg for -{c} option"));
            return assign_status(sh, h, name, "?");
        };
        sh.set_var("OPTARG", &value);
    } else {
        set_optind(sh, optind);
        sh.vars.remove("OPTARG");
    }
    assign_status(sh, h, name, &c.to_string())
}

/// Set `getopts`'s variable: status 0, or 2 if it is read-only.
fn assign_status<H: Host>(sh: &mut Shell, h: &mut H, name: &str, value: &str) -> i32 {
    match sh.assign(name, value) {
        Ok(()) => 0,
        Err(e) => {
            sh.error(h, &format!("getopts: {e}"));
            STATUS_USAGE
        }
    }
}
