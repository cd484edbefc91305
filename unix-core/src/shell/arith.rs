//! Arithmetic expansion's expressions (XCU 2.6.4): signed 64-bit integers
//! with C's operators and precedence, variables by name, and `=` and the
//! compound assignments.
//!
//! What it is not: the expansion of `$x` inside `$((…))` (done before,
//! by the expander); here a bare name is read through [`ArithVars`].
//!
//! Invariants: every malformed expression, division by zero or overflow
//! is an error with a short reason, never a panic or a wrapped value.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Variables an expression reads and assigns.
pub trait ArithVars {
    fn get(&self, name: &str) -> Option<String>;
    fn set(&mut self, name: &str, value: i64);
}

#[derive(Clone, Debug, PartialEq)]
enum T {
    Num(i64),
    Name(String),
    Op(&'static str),
}

const OPS: [&str; 35] = [
    "<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "^=",
    "|=", "+", "-", "*", "/", "%", "<", ">", "&", "^", "|", "!", "~", "(", ")", "?", ":", "=",
];

fn tokenize(s: &str) -> Result<Vec<T>, &'static str> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    'outer: while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_alphanumeric() {
                i += 1;
            }
            out.push(T::Num(parse_number(&s[start..i]).ok_or("bad number")?));
            continue;
        }
        if c == b'_' || c.is_ascii_alphabetic() {
            let start = i;
            while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                i += 1;
            }
            out.push(T::Name(s[start..i].to_string()));
            continue;
        }
        for op in OPS {
            if s[i..].starts_with(op) {
                out.push(T::Op(op));
                i += op.len();
                continue 'outer;
            }
        }
        return Err("syntax error");
    }
    Ok(out)
}

/// A C integer constant: decimal, `0x` hexadecimal or `0` octal.
fn parse_number(s: &str) -> Option<i64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        i64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        i64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// Evaluate `expr` (already parameter-expanded).
pub fn eval(expr: &str, vars: &mut dyn ArithVars) -> Result<i64, &'static str> {
    let toks = tokenize(expr)?;
    if toks.is_empty() {
        return Ok(0);
    }
    let mut p = P { toks, i: 0, vars, skip: 0 };
    let v = p.assign()?;
    if p.i != p.toks.len() {
        return Err("syntax error");
    }
    Ok(v)
}

struct P<'v> {
    toks: Vec<T>,
    i: usize,
    vars: &'v mut dyn ArithVars,
    /// Inside the branch not taken of `&&`, `||` or `?:`: no assignments.
    skip: u32,
}

/// Binary operators by precedence, loosest first (after `?:`).
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", "<=", ">", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl P<'_> {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.i) {
            Some(T::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn expect(&mut self, op: &str) -> Result<(), &'static str> {
        if self.peek_op() == Some(op) {
            self.i += 1;
            Ok(())
        } else {
            Err("syntax error")
        }
    }

    fn var(&self, name: &str) -> Result<i64, &'static str> {
        match self.vars.get(name) {
            None => Ok(0),
            Some(v) if v.trim().is_empty() => Ok(0),
            Some(v) => {
                let v = v.trim();
                let (neg, digits) = match v.strip_prefix('-') {
                    Some(d) => (true, d),
                    None => (false, v),
                };
                let n = parse_number(digits).ok_or("variable is not a number")?;
                Ok(if neg { -n } else { n })
            }
        }
    }

    fn assign(&mut self) -> Result<i64, &'static str> {
        if let (Some(T::Name(name)), Some(T::Op(op))) = (self.toks.get(self.i), self.toks.get(self.i + 1))
            && op.ends_with('=')
            && !matches!(*op, "==" | "!=" | "<=" | ">=")
        {
            let (name, op) = (name.clone(), *op);
            self.i += 2;
            let rhs = self.assign()?;
            let value = if op == "=" { rhs } else { binary(&op[..op.len() - 1], self.var(&name)?, rhs)? };
            if self.skip == 0 {
                self.vars.set(&name, value);
            }
            return Ok(value);
        }
        self.conditional()
    }

    fn conditional(&mut self) -> Result<i64, &'static str> {
        let c = self.binary(0)?;
        if self.peek_op() != Some("?") {
            return Ok(c);
        }
        self.i += 1;
        self.skip += (c == 0) as u32;
        let a = self.assign()?;
        self.skip -= (c == 0) as u32;
        self.expect(":")?;
        self.skip += (c != 0) as u32;
        let b = self.conditional()?;
        self.skip -= (c != 0) as u32;
        Ok(if c != 0 { a } else { b })
    }

    fn binary(&mut self, level: usize) -> Result<i64, &'static str> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|o| LEVELS[level].contains(o)) {
            self.i += 1;
            // `&&` and `||` do not evaluate (assign) their right side
            // when the left decides.
            let short = (op == "&&" && left == 0) || (op == "||" && left != 0);
            self.skip += short as u32;
            let right = self.binary(level + 1)?;
            self.skip -= short as u32;
            left = binary(op, left, right)?;
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<i64, &'static str> {
        match self.toks.get(self.i).cloned() {
            Some(T::Op(op @ ("-" | "+" | "!" | "~"))) => {
                self.i += 1;
                let v = self.unary()?;
                Ok(match op {
                    "-" => v.checked_neg().ok_or("overflow")?,
                    "+" => v,
                    "!" => (v == 0) as i64,
                    _ => !v,
                })
            }
            Some(T::Op("(")) => {
                self.i += 1;
                let v = self.assign()?;
                self.expect(")")?;
                Ok(v)
            }
            Some(T::Num(n)) => {
                self.i += 1;
                Ok(n)
            }
            Some(T::Name(name)) => {
                self.i += 1;
                self.var(&name)
            }
            _ => Err("syntax error"),
        }
    }
}

fn binary(op: &str, a: i64, b: i64) -> Result<i64, &'static str> {
    Ok(match op {
        "+" => a.checked_add(b).ok_or("overflow")?,
        "-" => a.checked_sub(b).ok_or("overflow")?,
        "*" => a.checked_mul(b).ok_or("overflow")?,
        "/" | "%" if b == 0 => return Err("division by zero"),
        "/" => a.checked_div(b).ok_or("overflow")?,
        "%" => a.checked_rem(b).ok_or("overflow")?,
        "<<" => a.checked_shl(u32::try_from(b).map_err(|_| "bad shift")?).ok_or("bad shift")?,
        ">>" => a.checked_shr(u32::try_from(b).map_err(|_| "bad shift")?).ok_or("bad shift")?,
        "<" => (a < b) as i64,
        "<=" => (a <= b) as i64,
        ">" => (a > b) as i64,
        ">=" => (a >= b) as i64,
        "==" => (a == b) as i64,
        "!=" => (a != b) as i64,
        "&" => a & b,
        "^" => a ^ b,
        "|" => a | b,
        "&&" => (a != 0 && b != 0) as i64,
        "||" => (a != 0 || b != 0) as i64,
        _ => return Err("syntax error"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct V(HashMap<String, String>);
    impl ArithVars for V {
        fn get(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn set(&mut self, name: &str, value: i64) {
            self.0.insert(name.to_string(), alloc::format!("{value}"));
        }
    }

    fn ev(s: &str) -> Result<i64, &'static str> {
        let mut v = V(HashMap::from([("x".to_string(), "5".to_string()), ("e".to_string(), "".to_string())]));
        eval(s, &mut v)
    }

    #[test]
    fn precedence_and_operators() {
        assert_eq!(ev("1+2*3"), Ok(7));
        assert_eq!(ev("(1+2)*3"), Ok(9));
        assert_eq!(ev("7/2"), Ok(3));
        assert_eq!(ev("-7%3"), Ok(-1));
        assert_eq!(ev("1<<4 | 1"), Ok(17));
        assert_eq!(ev("x*2"), Ok(10));
        assert_eq!(ev("unset+e+1"), Ok(1));
        assert_eq!(ev("3>2 && 2>3"), Ok(0));
        assert_eq!(ev("!0 + ~0"), Ok(0));
        assert_eq!(ev("x ? 10 : 20"), Ok(10));
        assert_eq!(ev("0x10 + 010"), Ok(24));
        assert_eq!(ev(""), Ok(0));
    }

    #[test]
    fn assignments() {
        let mut v = V(HashMap::new());
        assert_eq!(eval("i = 3", &mut v), Ok(3));
        assert_eq!(eval("i += 2", &mut v), Ok(5));
        assert_eq!(v.0["i"], "5");
        assert_eq!(eval("0 && (i = 9)", &mut v), Ok(0));
        assert_eq!(v.0["i"], "5");
    }

    #[test]
    fn errors() {
        assert_eq!(ev("1/0"), Err("division by zero"));
        assert_eq!(ev("1 +"), Err("syntax error"));
        assert_eq!(ev("(1"), Err("syntax error"));
        assert_eq!(ev("1 2"), Err("syntax error"));
        assert_eq!(ev("9223372036854775807 + 1"), Err("overflow"));
        assert_eq!(ev("08"), Err("bad number"));
        assert_eq!(ev("$"), Err("syntax error"));
    }
}
