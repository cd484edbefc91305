//! xargs: run COMMAND (default `echo`) with arguments read from standard
//! input, as POSIX `xargs`: `-n N` at most N arguments per command, `-I
//! REPLACE` one command per input line with REPLACE in the initial
//! arguments replaced by the line, `-r` nothing when there is no input
//! (GNU's), `-t` each command on standard error first. Status 0; 123 if a
//! command exited 1-125; 124 if one exited 255 (xargs stops); 125 if one
//! was killed; 126/127 if one could not run / was not found. Input
//! splitting: `coreutils::xargs` (host-tested).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use coreutils::getopt;
use coreutils::io;
use coreutils::xargs;
use runtime::{eprintln, unix};

runtime::entry!(main);

const PROG: &str = "xargs";
/// Bytes of arguments one command gets at most: the exec call carries
/// argv and the environment in one message (`abi::msg::MAX_DATA_BYTES`),
/// so leave room for the environment.
const ARG_BUDGET_BYTES: usize = abi::msg::MAX_DATA_BYTES as usize / 2;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let p = match getopt::parse(&ops, "n:I:rt", false) {
        Ok(p) => p,
        Err(e) => {
            io::complain(PROG, &e);
            return 1;
        }
    };
    let max_args = match p.last('n').map(str::parse::<usize>) {
        None => usize::MAX,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            io::complain(
                PROG,
                &alloc::format!("invalid number \"{}\" for -n option", p.last('n').unwrap_or("")),
            );
            return 1;
        }
    };
    let template: Vec<&str> = if p.operands.is_empty() { Vec::from(["echo"]) } else { p.operands.clone() };
    let input = match io::read_all(0) {
        Ok(i) => i,
        Err(e) => {
            io::report(PROG, "standard input", e);
            return 1;
        }
    };
    let input = String::from_utf8_lossy(&input);
    let env: Vec<&str> = unix::env().collect();
    let mut status = 0;
    let mut run = |argv: &[&str]| -> Option<i32> {
        if p.has('t') {
            eprintln!("{}", argv.join(" "));
        }
        match run_one(argv, &env) {
            0 => None,
            255 => {
                io::complain(PROG, &alloc::format!("{}: exited with status 255; aborting", argv[0]));
                Some(124)
            }
            s @ (125..=127) => Some(s),
            s if s > 255 => Some(125),
            _ => {
                status = 123;
                None
            }
        }
    };
    if let Some(replace) = p.last('I') {
        for line in xargs::split_lines(&input) {
            let argv = xargs::substitute(&template, replace, &line);
            let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
            if let Some(s) = run(&argv) {
                return s;
            }
        }
        return status;
    }
    let words = match xargs::split_args(&input) {
        Ok(w) => w,
        Err(e) => {
            io::complain(PROG, &e);
            return 1;
        }
    };
    if words.is_empty() {
        if p.has('r') {
            return 0;
        }
        return run(&template).unwrap_or(status);
    }
    let mut i = 0;
    while i < words.len() {
        let mut argv: Vec<&str> = template.clone();
        let mut bytes = 0;
        let mut taken = 0;
        while i < words.len() && taken < max_args && (taken == 0 || bytes + words[i].len() < ARG_BUDGET_BYTES)
        {
            bytes += words[i].len() + 1;
            argv.push(&words[i]);
            taken += 1;
            i += 1;
        }
        if let Some(s) = run(&argv) {
            return s;
        }
    }
    status
}

/// Run `argv` and wait: its exit status, or 256 + the signal that killed it.
fn run_one(argv: &[&str], env: &[&str]) -> i32 {
    match unix::fork() {
        Ok(0) => unix::exit(io::exec_command(PROG, argv, env)),
        Ok(pid) => match unix::waitpid(pid as i64, false) {
            Ok(Some((_, st))) => match (st.exit_code(), st.signal()) {
                (Some(code), _) => code as i32,
                (None, Some(sig)) => 256 + sig as i32,
                _ => 125,
            },
            _ => 125,
        },
        Err(e) => {
            io::report(PROG, "fork", e);
            125
        }
    }
}
