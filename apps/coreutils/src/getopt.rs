//! Command-line options with arguments, as POSIX `getopt` (XBD 12.2) and
//! GNU's permutation: `-n 5`, `-n5`, grouped flags (`-vc`), `--` ends the
//! options, a lone `-` is an operand. With `permute` (GNU's default),
//! options may follow operands (`grep x file -v`); without it (POSIX,
//! and what `env`, `xargs` and `find` need) the first operand ends them.
//!
//! [`crate::text::Options`] stays for the programs with flags only.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The options found, in order, and the operands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub opts: Vec<(char, Option<&'a str>)>,
    pub operands: Vec<&'a str>,
}

impl<'a> Parsed<'a> {
    pub fn has(&self, c: char) -> bool {
        self.opts.iter().any(|&(o, _)| o == c)
    }

    /// The argument of the last `-c` given.
    pub fn last(&self, c: char) -> Option<&'a str> {
        self.opts.iter().rev().find(|&&(o, _)| o == c).and_then(|&(_, v)| v)
    }

    /// Every argument given to `-c`, in order.
    pub fn all(&self, c: char) -> Vec<&'a str> {
        self.opts.iter().filter(|&&(o, _)| o == c).filter_map(|&(_, v)| v).collect()
    }
}

/// Parse `args` (without the program name) against `spec`: letters, each
/// followed by `:` when it takes an argument. The error is the message
/// GNU prints after `prog: `.
pub fn parse<'a>(args: &[&'a str], spec: &str, permute: bool) -> Result<Parsed<'a>, String> {
    let mut out = Parsed::default();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg == "--" {
            out.operands.extend_from_slice(&args[i..]);
            break;
        }
        if arg == "-" || !arg.starts_with('-') {
            out.operands.push(arg);
            if !permute {
                out.operands.extend_from_slice(&args[i..]);
                break;
            }
            continue;
        }
        for (at, c) in arg.char_indices().skip(1) {
            let Some(pos) = spec.find(c).filter(|_| c != ':') else {
                return Err(format!("invalid option -- '{c}'"));
            };
            if spec[pos + c.len_utf8()..].starts_with(':') {
                let rest = &arg[at + c.len_utf8()..];
                let value = if !rest.is_empty() {
                    rest
                } else if i < args.len() {
                    i += 1;
                    args[i - 1]
                } else {
                    return Err(format!("option requires an argument -- '{c}'"));
                };
                out.opts.push((c, Some(value)));
                break;
            }
            out.opts.push((c, None));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn arguments_attached_and_separate() {
        let p = parse(&["-n", "5", "-c3", "-vx", "f"], "n:c:vx", true).unwrap();
        assert_eq!(p.opts, vec![('n', Some("5")), ('c', Some("3")), ('v', None), ('x', None)]);
        assert_eq!(p.operands, vec!["f"]);
        assert_eq!(p.last('n'), Some("5"));
        let p = parse(&["-ve", "a", "-e", "b"], "ve:", true).unwrap();
        assert_eq!(p.all('e'), vec!["a", "b"]);
        assert!(p.has('v'));
    }

    #[test]
    fn permutation_and_its_end() {
        let p = parse(&["a", "-v", "--", "-x", "-"], "v", true).unwrap();
        assert_eq!(p.operands, vec!["a", "-x", "-"]);
        assert!(p.has('v'));
        let p = parse(&["-i", "cmd", "-v"], "iv", false).unwrap();
        assert_eq!(p.operands, vec!["cmd", "-v"]);
        assert!(!p.has('v'));
        let p = parse(&["-", "-v"], "v", true).unwrap();
        assert_eq!(p.operands, vec!["-"]);
    }

    #[test]
    fn errors() {
        assert_eq!(parse(&["-z"], "n:", true), Err("invalid option -- 'z'".into()));
        assert_eq!(parse(&["-n"], "n:", true), Err("option requires an argument -- 'n'".into()));
        assert_eq!(parse(&["-:"], "n:", true), Err("invalid option -- ':'".into()));
    }
}
