//! env: print the environment, or run a command in a changed one, as
//! POSIX `env`: `env [-i] [-u NAME]... [NAME=VALUE]... [COMMAND [ARG]...]`.
//! `-i` (or a lone `-`) starts from an empty environment. Status: the
//! command's (it replaces env), 126 if it could not run, 127 if it was
//! not found, 125 for env's own trouble (GNU's).

#![no_std]
#![no_main]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::String;
use alloc::vec::Vec;
use coreutils::io::{self, Out};
use runtime::unix;

runtime::entry!(main);

const PROG: &str = "env";
const TROUBLE: i32 = 125;

fn main(args: runtime::Args) -> i32 {
    let ops = io::operands(&args);
    let mut env: Vec<String> = unix::env().map(String::from).collect();
    let mut i = 0;
    while i < ops.len() {
        match ops[i] {
            "-i" | "-" => env.clear(),
            "-u" => {
                let Some(name) = ops.get(i + 1) else {
                    io::complain(PROG, "option requires an argument -- 'u'");
                    return TROUBLE;
                };
                env.retain(|e| e.split_once('=').map_or(e.as_str(), |(n, _)| n) != *name);
                i += 1;
            }
            "--" => {
                i += 1;
                break;
            }
            o if o.starts_with('-') && o.len() > 1 => {
                io::complain(PROG, &alloc::format!("invalid option -- '{}'", &o[1..2]));
                return TROUBLE;
            }
            _ => break,
        }
        i += 1;
    }
    while let Some(assignment) = ops.get(i).filter(|a| a.contains('=')) {
        let name = assignment.split_once('=').map_or("", |(n, _)| n);
        env.retain(|e| e.split_once('=').map_or(e.as_str(), |(n, _)| n) != name);
        env.push(String::from(*assignment));
        i += 1;
    }
    if i >= ops.len() {
        let mut out = Out::new();
        for e in &env {
            out.line(e);
        }
        return out.finish(PROG, 0);
    }
    let envp: Vec<&str> = env.iter().map(String::as_str).collect();
    io::exec_command(PROG, &ops[i..], &envp)
}
