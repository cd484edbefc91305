//! What the shell's tests share: a fixed set of variables and ways to run
//! a line through `parse` and expansion.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;

use super::errors::ParseErrorKind;
use super::expand::SimpleCommand;
use super::parser::parse;

/// The variables every test line sees.
fn vars() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        ("HOME", "/home/u"),
        ("X", "x"),
        ("SP", " a  b "),
        ("EMPTY", ""),
        ("?", "3"),
        ("$", "42"),
        ("1", "first"),
    ])
}

/// [`vars`] as expansion reads them (a [`Vars`](super::expand::Vars)).
pub(super) fn lookup(name: &str) -> Option<String> {
    vars().get(name).map(|s| s.to_string())
}

/// The argv of every command of a one-item, one-pipeline line.
pub(super) fn argvs(src: &str) -> Vec<Vec<String>> {
    let list = parse(src).unwrap_or_else(|e| panic!("{src:?}: {e}"));
    assert_eq!(list.items.len(), 1, "{src:?}");
    list.items[0].and_or.first.commands.iter().map(|c| c.expand(&lookup).unwrap().argv).collect()
}

/// The argv of a line of one command.
pub(super) fn argv(src: &str) -> Vec<String> {
    let mut a = argvs(src);
    assert_eq!(a.len(), 1, "{src:?}");
    a.remove(0)
}

/// The first command of a line, expanded.
pub(super) fn simple(src: &str) -> SimpleCommand {
    let list = parse(src).unwrap();
    list.items[0].and_or.first.commands[0].expand(&lookup).unwrap()
}

/// The kind of syntax error a line gives (it must give one).
pub(super) fn kind(src: &str) -> ParseErrorKind {
    match parse(src) {
        Ok(l) => panic!("{src:?} parsed: {l:?}"),
        Err(e) => e.kind,
    }
}

/// Owned strings, to compare with what expansion gives.
pub(super) fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}
