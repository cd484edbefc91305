//! Expansion: a command's words turned into the strings it runs with,
//! just before it runs ([`Command::expand`], [`Word::expand`]).
//!
//! What it is not: a parser, and not a full POSIX expander: there is no
//! command substitution, arithmetic, globbing, `$@` or `$*` (the lexer
//! refuses them).
//!
//! # Invariants
//! - Unquoted expansions are split into fields at blanks, quoted ones
//!   never; a word made only of unquoted expansions that come out empty
//!   yields no field, while `""` yields one empty field.
//! - Values are read from [`Vars`] at expansion time, never at parse time.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::errors::ExpandError;
use super::syntax::{Command, Part, RedirKind, Redirection, Word};

/// Where expansion finds parameter values: shell variables, the
/// environment and the special parameters (`"?"`, `"$"`, `"!"`, `"#"`,
/// `"0"`…`"9"`). `None` means unset, which expands to nothing.
pub trait Vars {
    fn var(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> Vars for F {
    fn var(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// The bytes that separate fields in unquoted expansions (POSIX's default
/// `IFS`, all of it white space).
fn is_field_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n')
}

impl Word {
    /// The word's fields after parameter expansion, field splitting and
    /// quote removal (see the module's invariants).
    pub fn expand<V: Vars + ?Sized>(&self, vars: &V) -> Vec<String> {
        let mut fields = Vec::new();
        let mut field = String::new();
        // Whether `field` exists even if empty (quoted text makes it exist).
        let mut open = false;
        for part in &self.parts {
            match part {
                Part::Text { text, .. } => {
                    field.push_str(text);
                    open = true;
                }
                Part::Home => {
                    field.push_str(&vars.var("HOME").unwrap_or_else(|| "~".to_string()));
                    open = true;
                }
                Part::Param { name, quoted: true } => {
                    field.push_str(&vars.var(name).unwrap_or_default());
                    open = true;
                }
                Part::Param { name, quoted: false } => {
                    for c in vars.var(name).unwrap_or_default().chars() {
                        if is_field_separator(c) {
                            if open {
                                fields.push(core::mem::take(&mut field));
                                open = false;
                            }
                        } else {
                            field.push(c);
                            open = true;
                        }
                    }
                }
            }
        }
        if open {
            fields.push(field);
        }
        fields
    }

    /// The word expanded without field splitting, as one string (for
    /// assignment values: `X=$Y` keeps `$Y`'s blanks).
    pub fn expand_joined<V: Vars + ?Sized>(&self, vars: &V) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text { text, .. } => out.push_str(text),
                Part::Home => out.push_str(&vars.var("HOME").unwrap_or_else(|| "~".to_string())),
                Part::Param { name, .. } => out.push_str(&vars.var(name).unwrap_or_default()),
            }
        }
        out
    }
}

/// A command ready to run: every word expanded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimpleCommand {
    pub assignments: Vec<(String, String)>,
    /// Empty for a command made only of assignments and redirections.
    pub argv: Vec<String>,
    pub redirections: Vec<Redirection<String>>,
}

impl Command {
    /// Expand every word of the command with the values `vars` has now.
    pub fn expand<V: Vars + ?Sized>(&self, vars: &V) -> Result<SimpleCommand, ExpandError> {
        let assignments =
            self.assignments.iter().map(|a| (a.name.clone(), a.value.expand_joined(vars))).collect();
        let argv = self.words.iter().flat_map(|w| w.expand(vars)).collect();
        let mut redirections = Vec::with_capacity(self.redirections.len());
        for r in &self.redirections {
            let path = |w: &Word| -> Result<String, ExpandError> {
                let mut fields = w.expand(vars);
                if fields.len() != 1 {
                    return Err(ExpandError::AmbiguousRedirect { word: w.raw.clone() });
                }
                Ok(fields.remove(0))
            };
            let kind = match &r.kind {
                RedirKind::Read(w) => RedirKind::Read(path(w)?),
                RedirKind::Write(w) => RedirKind::Write(path(w)?),
                RedirKind::Append(w) => RedirKind::Append(path(w)?),
                RedirKind::Dup(n) => RedirKind::Dup(*n),
                RedirKind::Close => RedirKind::Close,
            };
            redirections.push(Redirection { fd: r.fd, kind });
        }
        Ok(SimpleCommand { assignments, argv, redirections })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::parse;
    use crate::shell::testing::{argv, lookup, s};

    #[test]
    fn parameters() {
        assert_eq!(argv("echo $X"), s(&["echo", "x"]));
        assert_eq!(argv("echo ${X}y $Xy"), s(&["echo", "xy"]));
        assert_eq!(argv("echo $? $$ $1"), s(&["echo", "3", "42", "first"]));
        assert_eq!(argv("echo ${?}"), s(&["echo", "3"]));
        assert_eq!(argv("echo $10"), s(&["echo", "first0"]));
        assert_eq!(argv("echo a$X-b"), s(&["echo", "ax-b"]));
        assert_eq!(argv("echo $"), s(&["echo", "$"]));
        assert_eq!(argv("echo a$ $/ \"$\""), s(&["echo", "a$", "$/", "$"]));
        assert_eq!(argv("echo $UNSET"), s(&["echo"]));
        assert_eq!(argv("echo \"$UNSET\""), s(&["echo", ""]));
        assert_eq!(argv("echo $EMPTY$UNSET x"), s(&["echo", "x"]));
        assert_eq!(argv("echo ''$UNSET"), s(&["echo", ""]));
    }

    #[test]
    fn field_splitting_only_unquoted() {
        assert_eq!(argv("echo $SP"), s(&["echo", "a", "b"]));
        assert_eq!(argv("echo \"$SP\""), s(&["echo", " a  b "]));
        assert_eq!(argv("echo x$SP"), s(&["echo", "x", "a", "b"]));
        assert_eq!(argv("echo ${SP}y"), s(&["echo", "a", "b", "y"]));
        assert_eq!(argv("echo \"q\"$SP\"r\""), s(&["echo", "q", "a", "b", "r"]));
    }

    #[test]
    fn expansion_uses_values_at_expansion_time() {
        let list = parse("echo $?").unwrap();
        let cmd = &list.items[0].and_or.first.commands[0];
        let v1 = |n: &str| (n == "?").then(|| "0".to_string());
        let v2 = |n: &str| (n == "?").then(|| "1".to_string());
        assert_eq!(cmd.expand(&v1).unwrap().argv, s(&["echo", "0"]));
        assert_eq!(cmd.expand(&v2).unwrap().argv, s(&["echo", "1"]));
    }

    #[test]
    fn tilde() {
        assert_eq!(argv("cd ~"), s(&["cd", "/home/u"]));
        assert_eq!(argv("ls ~/bin"), s(&["ls", "/home/u/bin"]));
        assert_eq!(argv("echo a~ ~x '~' \"~\""), s(&["echo", "a~", "~x", "~", "~"]));
        let none = |_: &str| None;
        let list = parse("echo ~").unwrap();
        assert_eq!(list.items[0].and_or.first.commands[0].expand(&none).unwrap().argv, s(&["echo", "~"]));
    }

    #[test]
    fn ambiguous_redirect() {
        let list = parse("echo > $SP").unwrap();
        let e = list.items[0].and_or.first.commands[0].expand(&lookup).unwrap_err();
        assert_eq!(e, ExpandError::AmbiguousRedirect { word: "$SP".into() });
        assert_eq!(alloc::format!("{e}"), "$SP: ambiguous redirect");
        let list = parse("echo > $UNSET").unwrap();
        assert!(list.items[0].and_or.first.commands[0].expand(&lookup).is_err());
        // Quoted, it is one (empty) name: the open will fail, not the parse.
        let list = parse("echo > \"$UNSET\"").unwrap();
        assert!(list.items[0].and_or.first.commands[0].expand(&lookup).is_ok());
    }
}
