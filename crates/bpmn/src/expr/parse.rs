//! Dialect detection, the lexer and the recursive-descent parser.
//!
//! Recursion is bounded: the parser counts nesting (parentheses, lists,
//! prefix operators) and the depth of the tree it builds, and refuses either
//! beyond [`MAX_DEPTH`], so hostile input cannot overflow the stack.

use super::{
    BinaryOp, Expr, ExprError, KEYWORDS, MAX_CHARS, MAX_DEPTH, PREC_AND, PREC_CMP, PREC_OR,
    PREC_PRODUCT, PREC_SUM, Path, Step, UnaryOp, is_name_char, is_name_start, quote,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Juel,
    Feel,
    Bare,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// A number's text, without sign: converted by the parser, which knows
    /// whether a unary minus precedes it.
    Num(String),
    Str(String),
    Word(String),
    Sym(&'static str),
    End,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// Char offset in the whole text.
    at: usize,
}

fn error(at: usize, message: impl Into<String>) -> ExprError {
    ExprError::Parse {
        message: message.into(),
        offset: at,
    }
}

fn too_deep(at: usize) -> ExprError {
    error(
        at,
        format!("expression nested deeper than {MAX_DEPTH} levels"),
    )
}

pub(super) fn parse(text: &str) -> Result<Expr, ExprError> {
    // Checked before collecting, so a huge text costs nothing more.
    if text.chars().nth(MAX_CHARS).is_some() {
        return Err(error(
            MAX_CHARS,
            format!("expression longer than {MAX_CHARS} characters"),
        ));
    }
    let chars: Vec<char> = text.chars().collect();
    let start = chars
        .iter()
        .position(|c| !c.is_whitespace())
        .unwrap_or(chars.len());
    let end = chars
        .iter()
        .rposition(|c| !c.is_whitespace())
        .map_or(start, |i| i + 1);
    let trimmed = &chars[start..end];
    let (dialect, body_start, body_end) =
        if trimmed.starts_with(&['$', '{']) || trimmed.starts_with(&['#', '{']) {
            if trimmed.len() < 3 || trimmed.last() != Some(&'}') {
                return Err(error(
                    end,
                    format!("missing the '}}' that closes '{}{{'", trimmed[0]),
                ));
            }
            (Dialect::Juel, start + 2, end - 1)
        } else if trimmed.first() == Some(&'=') {
            (Dialect::Feel, start + 1, end)
        } else {
            (Dialect::Bare, start, end)
        };
    let tokens = lex(&chars[..body_end], body_start, dialect)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        dialect,
        nesting: 0,
    };
    let (expr, _) = parser.expr()?;
    match parser.peek() {
        Tok::End => Ok(expr),
        _ => Err(parser.unexpected()),
    }
}

/// Lexes `chars[from..]`; offsets are indexes into `chars`, i.e. into the text.
fn lex(chars: &[char], from: usize, dialect: Dialect) -> Result<Vec<Token>, ExprError> {
    let mut tokens = Vec::new();
    let mut i = from;
    while let Some(&c) = chars.get(i) {
        let at = i;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c.is_ascii_digit() {
            let (text, next) = lex_number(chars, i);
            i = next;
            Tok::Num(text)
        } else if c == '"' || c == '\'' {
            let (s, next) = lex_string(chars, i)?;
            i = next;
            Tok::Str(s)
        } else if is_name_start(c) {
            let len = chars[i..].iter().take_while(|&&c| is_name_char(c)).count();
            let word = chars[i..i + len].iter().collect();
            i += len;
            Tok::Word(word)
        } else {
            let next = chars.get(i + 1).copied();
            let (sym, len) = match (c, next) {
                ('=', Some('=')) => ("==", 2),
                ('!', Some('=')) => ("!=", 2),
                ('<', Some('=')) => ("<=", 2),
                ('>', Some('=')) => (">=", 2),
                ('&', Some('&')) => ("&&", 2),
                ('|', Some('|')) => ("||", 2),
                ('=', _) if dialect == Dialect::Feel => ("=", 1),
                ('=', _) => {
                    return Err(error(at, "unexpected '=' (use == for equality)"));
                }
                ('&', _) => return Err(error(at, "unexpected '&' (use && for and)")),
                ('|', _) => return Err(error(at, "unexpected '|' (use || for or)")),
                ('(', _) => ("(", 1),
                (')', _) => (")", 1),
                ('[', _) => ("[", 1),
                (']', _) => ("]", 1),
                ('.', _) => (".", 1),
                (',', _) => (",", 1),
                ('+', _) => ("+", 1),
                ('-', _) => ("-", 1),
                ('*', _) => ("*", 1),
                ('/', _) => ("/", 1),
                ('%', _) => ("%", 1),
                ('<', _) => ("<", 1),
                ('>', _) => (">", 1),
                ('!', _) => ("!", 1),
                _ => return Err(error(at, format!("unexpected character '{c}'"))),
            };
            i += len;
            Tok::Sym(sym)
        };
        tokens.push(Token { tok, at });
    }
    tokens.push(Token {
        tok: Tok::End,
        at: chars.len(),
    });
    Ok(tokens)
}

/// Digits, then optionally `.digits`, then optionally `e[+-]digits`; the
/// optional parts only when digits follow, so `1.x` stays `1` `.` `x`.
fn lex_number(chars: &[char], start: usize) -> (String, usize) {
    let digits_from = |i: usize| {
        chars[i.min(chars.len())..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count()
    };
    let mut i = start + digits_from(start);
    if chars.get(i) == Some(&'.') && digits_from(i + 1) > 0 {
        i += 1 + digits_from(i + 1);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let sign = usize::from(matches!(chars.get(i + 1), Some('+' | '-')));
        let exp = digits_from(i + 1 + sign);
        if exp > 0 {
            i += 1 + sign + exp;
        }
    }
    (chars[start..i].iter().collect(), i)
}

/// A quoted string starting at `start`; returns its value and the index after it.
fn lex_string(chars: &[char], start: usize) -> Result<(String, usize), ExprError> {
    let quote_char = chars[start];
    let mut out = String::new();
    let mut i = start + 1;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(error(start, "unterminated string"));
        };
        if c == quote_char {
            return Ok((out, i + 1));
        }
        if c != '\\' {
            out.push(c);
            i += 1;
            continue;
        }
        let escaped = match chars.get(i + 1) {
            Some('\\') => '\\',
            Some('\'') => '\'',
            Some('"') => '"',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('u') => {
                let hex: String = chars.iter().skip(i + 2).take(4).collect();
                let code = (hex.len() == 4 && hex.chars().all(|c| c.is_ascii_hexdigit()))
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        error(i, "invalid \\u escape (four hex digits, not a surrogate)")
                    })?;
                out.push(code);
                i += 6;
                continue;
            }
            Some(other) => return Err(error(i, format!("unknown escape '\\{other}'"))),
            None => return Err(error(start, "unterminated string")),
        };
        out.push(escaped);
        i += 2;
    }
}

/// An expression and the depth of its tree (a leaf is 1).
type Node = (Expr, usize);

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    dialect: Dialect,
    /// Current recursion through parentheses, lists and prefix operators.
    nesting: usize,
}

impl Parser {
    fn peek(&self) -> &Tok {
        // The lexer always ends the list with `End`, and `advance` never
        // moves past it.
        self.tokens.get(self.pos).map_or(&Tok::End, |t| &t.tok)
    }

    fn at(&self) -> usize {
        self.tokens
            .get(self.pos)
            .or(self.tokens.last())
            .map_or(0, |t| t.at)
    }

    /// Moves past the current token and returns its offset.
    fn advance(&mut self) -> usize {
        let at = self.at();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        at
    }

    /// The current token as an error message names it.
    fn describe(&self) -> String {
        match self.peek() {
            Tok::End => "end of expression".to_owned(),
            Tok::Num(text) => format!("number {text}"),
            Tok::Str(s) => format!("string {}", quote(s)),
            Tok::Word(w) => format!("'{w}'"),
            Tok::Sym(s) => format!("'{s}'"),
        }
    }

    fn unexpected(&self) -> ExprError {
        error(self.at(), format!("unexpected {}", self.describe()))
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Word(w) if w == word)
    }

    fn expect(&mut self, sym: &'static str) -> Result<usize, ExprError> {
        if *self.peek() == Tok::Sym(sym) {
            return Ok(self.advance());
        }
        Err(error(
            self.at(),
            format!("unexpected {}, expected '{sym}'", self.describe()),
        ))
    }

    fn enter(&mut self, at: usize) -> Result<(), ExprError> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(too_deep(at));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.nesting -= 1;
    }

    /// The infix operator the current token spells, if any.
    fn binary_op(&self) -> Option<BinaryOp> {
        Some(match self.peek() {
            Tok::Sym("||") => BinaryOp::Or,
            Tok::Sym("&&") => BinaryOp::And,
            Tok::Sym("==" | "=") => BinaryOp::Eq,
            Tok::Sym("!=") => BinaryOp::Ne,
            Tok::Sym("<") => BinaryOp::Lt,
            Tok::Sym("<=") => BinaryOp::Le,
            Tok::Sym(">") => BinaryOp::Gt,
            Tok::Sym(">=") => BinaryOp::Ge,
            Tok::Sym("+") => BinaryOp::Add,
            Tok::Sym("-") => BinaryOp::Sub,
            Tok::Sym("*") => BinaryOp::Mul,
            Tok::Sym("/") => BinaryOp::Div,
            Tok::Sym("%") => BinaryOp::Rem,
            Tok::Word(w) => match w.as_str() {
                "or" => BinaryOp::Or,
                "and" => BinaryOp::And,
                "eq" => BinaryOp::Eq,
                "ne" => BinaryOp::Ne,
                "lt" => BinaryOp::Lt,
                "le" => BinaryOp::Le,
                "gt" => BinaryOp::Gt,
                "ge" => BinaryOp::Ge,
                "div" => BinaryOp::Div,
                "mod" => BinaryOp::Rem,
                _ => return None,
            },
            _ => return None,
        })
    }

    fn expr(&mut self) -> Result<Node, ExprError> {
        self.level(PREC_OR)
    }

    /// Parses operators binding at least as tightly as `prec`.
    fn level(&mut self, prec: u8) -> Result<Node, ExprError> {
        match prec {
            PREC_CMP => self.comparison(),
            PREC_OR | PREC_AND | PREC_SUM | PREC_PRODUCT => {
                // A loop, not recursion, so long chains cost no stack.
                let mut left = self.level(prec + 1)?;
                while let Some(op) = self.binary_op().filter(|op| op.precedence() == prec) {
                    let at = self.advance();
                    let right = self.level(prec + 1)?;
                    left = binary(op, left, right, at)?;
                }
                Ok(left)
            }
            _ => self.unary(),
        }
    }

    fn comparison(&mut self) -> Result<Node, ExprError> {
        let left = self.level(PREC_SUM)?;
        let node = if let Some(op) = self.binary_op().filter(|op| op.precedence() == PREC_CMP) {
            let at = self.advance();
            let right = self.level(PREC_SUM)?;
            binary(op, left, right, at)?
        } else if self.is_word("in") {
            let at = self.advance();
            self.list(left, at)?
        } else {
            return Ok(left);
        };
        let chained = self
            .binary_op()
            .is_some_and(|op| op.precedence() == PREC_CMP)
            || self.is_word("in");
        if chained {
            return Err(error(
                self.at(),
                format!(
                    "unexpected {} (comparisons do not chain: add parentheses)",
                    self.describe()
                ),
            ));
        }
        Ok(node)
    }

    /// The `[a, b, …]` after `item in`.
    fn list(&mut self, item: Node, at: usize) -> Result<Node, ExprError> {
        let open = self.expect("[")?;
        self.enter(open)?;
        let mut depth = item.1;
        let mut list = Vec::new();
        if *self.peek() != Tok::Sym("]") {
            loop {
                let (e, d) = self.expr()?;
                depth = depth.max(d);
                list.push(e);
                if *self.peek() != Tok::Sym(",") {
                    break;
                }
                self.advance();
            }
        }
        self.expect("]")?;
        self.leave();
        node(
            Expr::In {
                item: Box::new(item.0),
                list,
            },
            depth + 1,
            at,
        )
    }

    fn unary(&mut self) -> Result<Node, ExprError> {
        let op = match self.peek() {
            Tok::Sym("!") => UnaryOp::Not,
            Tok::Sym("-") => UnaryOp::Neg,
            Tok::Word(w) if w == "not" => UnaryOp::Not,
            Tok::Word(w) if w == "empty" => UnaryOp::Empty,
            _ => return self.primary(),
        };
        let at = self.advance();
        if op == UnaryOp::Neg
            && let Tok::Num(text) = self.peek()
        {
            // `-5` is the literal -5, so i64::MIN is writable and a negative
            // number prints and re-parses as itself.
            let text = text.clone();
            let num_at = self.advance();
            return Ok((number(&text, true, num_at)?, 1));
        }
        self.enter(at)?;
        let (operand, depth) = self.unary()?;
        self.leave();
        node(
            Expr::Unary {
                op,
                operand: Box::new(operand),
            },
            depth + 1,
            at,
        )
    }

    fn primary(&mut self) -> Result<Node, ExprError> {
        let at = self.at();
        let expr = match self.peek().clone() {
            Tok::Num(text) => number(&text, false, at)?,
            Tok::Str(s) => Expr::Str(s),
            Tok::Word(w) => match w.as_str() {
                "true" => Expr::Bool(true),
                "false" => Expr::Bool(false),
                "null" => Expr::Null,
                _ if KEYWORDS.contains(&w.as_str()) => return Err(self.unexpected()),
                _ => {
                    self.advance();
                    return Ok((Expr::Var(self.path(w)?), 1));
                }
            },
            Tok::Sym("(") => {
                self.advance();
                self.enter(at)?;
                let inner = self.expr()?;
                self.expect(")")?;
                self.leave();
                return Ok(inner);
            }
            _ => return Err(self.unexpected()),
        };
        self.advance();
        Ok((expr, 1))
    }

    /// The steps after a root name.
    fn path(&mut self, root: String) -> Result<Path, ExprError> {
        let mut steps = Vec::new();
        loop {
            match self.peek() {
                Tok::Sym(".") => {
                    self.advance();
                    // Any word, reserved or not, is a field name after a dot.
                    let Tok::Word(name) = self.peek().clone() else {
                        return Err(error(self.at(), "expected a field name after '.'"));
                    };
                    self.advance();
                    steps.push(Step::Field(name));
                }
                Tok::Sym("[") => {
                    self.advance();
                    let at = self.at();
                    let step = match self.peek().clone() {
                        Tok::Str(key) => Step::Field(key),
                        Tok::Num(text) => Step::Index(self.index(&text, at)?),
                        _ => {
                            return Err(error(
                                at,
                                "expected a list index (a whole number) or a quoted key",
                            ));
                        }
                    };
                    self.advance();
                    self.expect("]")?;
                    steps.push(step);
                }
                _ => return Ok(Path { root, steps }),
            }
        }
    }

    /// A list index as written, turned 0-based (FEEL counts from 1).
    fn index(&self, text: &str, at: usize) -> Result<usize, ExprError> {
        let written: usize = text
            .parse()
            .map_err(|_| error(at, format!("invalid list index {text}")))?;
        if self.dialect != Dialect::Feel {
            return Ok(written);
        }
        written
            .checked_sub(1)
            .ok_or_else(|| error(at, "FEEL lists are indexed from 1"))
    }
}

/// A number literal from its unsigned text.
fn number(text: &str, negative: bool, at: usize) -> Result<Expr, ExprError> {
    let sign = if negative { "-" } else { "" };
    if text.contains(['.', 'e', 'E']) {
        return match format!("{sign}{text}").parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(Expr::Float(x)),
            _ => Err(error(at, format!("number {sign}{text} is out of range"))),
        };
    }
    format!("{sign}{text}")
        .parse::<i64>()
        .map(Expr::Int)
        .map_err(|_| {
            error(
                at,
                format!(
                    "whole number {sign}{text} is out of range (write it as a decimal, e.g. {sign}{text}.0)"
                ),
            )
        })
}

fn binary(op: BinaryOp, left: Node, right: Node, at: usize) -> Result<Node, ExprError> {
    node(
        Expr::Binary {
            op,
            left: Box::new(left.0),
            right: Box::new(right.0),
        },
        left.1.max(right.1) + 1,
        at,
    )
}

/// Refuses a tree deeper than the limit; evaluation and printing recurse on it.
fn node(expr: Expr, depth: usize, at: usize) -> Result<Node, ExprError> {
    if depth > MAX_DEPTH {
        return Err(too_deep(at));
    }
    Ok((expr, depth))
}
