//! The condition language: the text of a sequence flow's
//! `conditionExpression` (and of a multi-instance `completionCondition`),
//! evaluated against a process instance's variables (a JSON object).
//!
//! # Dialects
//!
//! [`parse`] reads the conditions real models carry and picks the dialect
//! from the trimmed text:
//!
//! - `${ … }` or `#{ … }`: JUEL (Camunda 7, the BPMN MIWG files); the body
//!   between the braces is parsed.
//! - `= …`: FEEL (Camunda 8). A single `=` is equality (`status = "done"`)
//!   and list indexes count from 1 (`items[1]` is the first item).
//! - anything else: a bare expression, read like a JUEL body.
//!
//! All dialects share one grammar and one AST ([`Expr`]); their differences
//! are settled while parsing, so evaluation knows no dialect. An [`Expr`]
//! prints (`Display`) in the canonical bare form, which parses back to the
//! same AST.
//!
//! # Grammar
//!
//! ```text
//! expr       = and { ("||" | "or") and }
//! and        = comparison { ("&&" | "and") comparison }
//! comparison = sum [ cmp sum | "in" "[" [ expr { "," expr } ] "]" ]
//! cmp        = "==" | "!=" | "<" | "<=" | ">" | ">="
//!            | "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "=" (FEEL only)
//! sum        = product { ("+" | "-") product }
//! product    = unary { ("*" | "/" | "%" | "div" | "mod") unary }
//! unary      = ("!" | "not" | "-" | "empty") unary | primary
//! primary    = number | string | "true" | "false" | "null" | path | "(" expr ")"
//! path       = name { "." name | "[" integer "]" | "[" string "]" }
//! ```
//!
//! Numbers are `42`, `1.5`, `2e3`; `-` before a number makes a negative
//! literal (`-5`), before anything else it negates (`-x`, `-(5)`).
//! Strings take single or double quotes and the escapes `\\ \' \" \n \r \t
//! \uXXXX`. A name is a letter or `_` followed by letters, digits or `_`.
//! The grammar's words (`and or not eq ne lt le gt ge empty div mod in true
//! false null`) are reserved in every dialect, so they cannot name a variable,
//! though any name may follow a `.`. FEEL's `not(x)` is `not` applied to
//! `(x)`. Comparisons do not chain: `a < b < c` is an error, parenthesise.
//! Whitespace and line breaks may stand between any two tokens. A text is
//! refused beyond 4,096 characters or 64 levels of nesting.
//!
//! # Semantics
//!
//! Evaluation is pure, total and deterministic; a problem is an
//! [`ExprError`], never a guess.
//!
//! - A path's root is a key of the variables object; `.name` and `["name"]`
//!   read an object field, `[i]` an array element: `[0]` is the first
//!   (written `[1]` in FEEL). An index is a literal, never computed.
//! - A path that does not resolve (absent key, index past the end, a step
//!   through `null`) is the error `unknown variable 'order.total'`, which
//!   the runner turns into an incident, with two exceptions: `empty x` is
//!   true for a missing `x`, and a comparison with the literal `null`
//!   (`x == null` true, `x != null` false) treats a missing `x` as null.
//!   Reading a field of a non-object, or an item of a non-array, is an error.
//! - `&&`, `||` and `!` take booleans only (no truthiness); `&&` and `||`
//!   short-circuit, so `x != null && x > 3` never reads a missing `x`.
//! - `==` and `!=` compare any two values structurally: numbers by value
//!   (`1 == 1.0`), different types are unequal, never coerced.
//! - `<`, `<=`, `>`, `>=` compare two numbers, or two strings by code
//!   point; other pairs are an error (`cannot compare string with number`).
//! - Arithmetic takes numbers only. Whole numbers stay whole and overflow is
//!   an error; `/` gives a whole number when exact, else a decimal; `%` takes
//!   the sign of the dividend; division by zero is an error.
//! - `empty x` is true for null, a missing variable, `""`, `[]` and `{}`,
//!   false otherwise. `x in [a, b]` is `x == a || x == b`.
//! - A condition ([`condition`]) must evaluate to a boolean.

use std::fmt;

use serde_json::Value;

mod eval;
mod parse;
#[cfg(test)]
mod tests;

/// Longest accepted text, in characters.
pub const MAX_CHARS: usize = 4096;
/// Deepest accepted nesting of operators and parentheses.
pub const MAX_DEPTH: usize = 64;

/// A parsed expression: the syntax tree shared by all dialects.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// The literal `null`.
    Null,
    /// The literal `true` or `false`.
    Bool(bool),
    /// A whole-number literal.
    Int(i64),
    /// A decimal literal; always finite when parsed.
    Float(f64),
    /// A string literal.
    Str(String),
    /// A variable path such as `order.items[0].price`.
    Var(Path),
    /// A prefix operator and its operand.
    Unary {
        /// The operator.
        op: UnaryOp,
        /// The operand.
        operand: Box<Expr>,
    },
    /// An infix operator and its operands.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// The left operand.
        left: Box<Expr>,
        /// The right operand.
        right: Box<Expr>,
    },
    /// `item in [a, b, …]`: whether `item` equals one of the listed values.
    In {
        /// The value looked for.
        item: Box<Expr>,
        /// The candidates, in order.
        list: Vec<Expr>,
    },
}

/// A prefix operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `!x`, `not x`, FEEL `not(x)`: boolean negation.
    Not,
    /// `-x`: arithmetic negation.
    Neg,
    /// `empty x` (JUEL): null, missing, `""`, `[]` or `{}`.
    Empty,
}

/// An infix operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `||`, `or`.
    Or,
    /// `&&`, `and`.
    And,
    /// `==`, `eq`, FEEL `=`.
    Eq,
    /// `!=`, `ne`.
    Ne,
    /// `<`, `lt`.
    Lt,
    /// `<=`, `le`.
    Le,
    /// `>`, `gt`.
    Gt,
    /// `>=`, `ge`.
    Ge,
    /// `+`.
    Add,
    /// `-`.
    Sub,
    /// `*`.
    Mul,
    /// `/`, `div`.
    Div,
    /// `%`, `mod`.
    Rem,
}

/// A variable path: a root variable name and the steps into its value.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Path {
    /// The variable's name.
    pub root: String,
    /// Field and index steps, in order.
    pub steps: Vec<Step>,
}

/// One step of a [`Path`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Step {
    /// `.name` or `["name"]`: an object field.
    Field(String),
    /// `[i]`: an array element, counted from 0.
    Index(usize),
}

/// Why a text does not parse or an expression does not evaluate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// The text is not a valid expression.
    #[error("{message} at {offset}")]
    Parse {
        /// What is wrong, e.g. `unexpected ')'`.
        message: String,
        /// Char offset of the problem in the text given to [`parse`].
        offset: usize,
    },
    /// A variable the expression reads is not set.
    #[error("unknown variable '{name}'")]
    UnknownVariable {
        /// The path read, e.g. `order.total`.
        name: String,
    },
    /// The expression cannot be evaluated on these variables.
    #[error("{message}")]
    Eval {
        /// What went wrong, e.g. `cannot compare string with number`.
        message: String,
    },
}

impl ExprError {
    /// The char offset of a parse error; `None` for evaluation errors.
    pub fn offset(&self) -> Option<usize> {
        match self {
            Self::Parse { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}

/// Parses a condition in any dialect (see the module documentation).
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    parse::parse(text)
}

/// Evaluates an expression against the variables (a JSON object).
pub fn evaluate(expr: &Expr, vars: &Value) -> Result<Value, ExprError> {
    eval::evaluate(expr, vars)
}

/// Evaluates a condition: the result must be a JSON boolean.
pub fn condition(expr: &Expr, vars: &Value) -> Result<bool, ExprError> {
    match evaluate(expr, vars)? {
        Value::Bool(b) => Ok(b),
        other => Err(ExprError::Eval {
            message: format!(
                "a condition must be true or false, got {}",
                eval::describe(&other)
            ),
        }),
    }
}

/// The root variable names the expression reads, deduplicated, in first-use order.
pub fn variables(expr: &Expr) -> Vec<String> {
    let mut names = Vec::new();
    collect_variables(expr, &mut names);
    names
}

fn collect_variables(expr: &Expr, names: &mut Vec<String>) {
    match expr {
        Expr::Null | Expr::Bool(_) | Expr::Int(_) | Expr::Float(_) | Expr::Str(_) => {}
        Expr::Var(path) => {
            if !names.contains(&path.root) {
                names.push(path.root.clone());
            }
        }
        Expr::Unary { operand, .. } => collect_variables(operand, names),
        Expr::Binary { left, right, .. } => {
            collect_variables(left, names);
            collect_variables(right, names);
        }
        Expr::In { item, list } => {
            collect_variables(item, names);
            for e in list {
                collect_variables(e, names);
            }
        }
    }
}

// Binding strength, loosest first; `Display` parenthesises a child that binds
// more loosely than its position requires, and the parser climbs the same
// ladder.
const PREC_OR: u8 = 1;
const PREC_AND: u8 = 2;
const PREC_CMP: u8 = 3;
const PREC_SUM: u8 = 4;
const PREC_PRODUCT: u8 = 5;
const PREC_UNARY: u8 = 6;
const PREC_ATOM: u8 = 7;

/// The words the grammar reserves; they cannot name a root variable.
const KEYWORDS: [&str; 16] = [
    "and", "or", "not", "eq", "ne", "lt", "le", "gt", "ge", "empty", "div", "mod", "in", "true",
    "false", "null",
];

impl BinaryOp {
    /// The canonical symbol, as `Display` prints it.
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Or => "||",
            Self::And => "&&",
            Self::Eq => "==",
            Self::Ne => "!=",
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Add => "+",
            Self::Sub => "-",
            Self::Mul => "*",
            Self::Div => "/",
            Self::Rem => "%",
        }
    }

    fn precedence(self) -> u8 {
        match self {
            Self::Or => PREC_OR,
            Self::And => PREC_AND,
            Self::Eq | Self::Ne | Self::Lt | Self::Le | Self::Gt | Self::Ge => PREC_CMP,
            Self::Add | Self::Sub => PREC_SUM,
            Self::Mul | Self::Div | Self::Rem => PREC_PRODUCT,
        }
    }
}

impl Expr {
    fn precedence(&self) -> u8 {
        match self {
            Self::Unary { .. } => PREC_UNARY,
            Self::Binary { op, .. } => op.precedence(),
            Self::In { .. } => PREC_CMP,
            _ => PREC_ATOM,
        }
    }

    /// Writes `self`, parenthesised if it binds more loosely than `min`.
    fn write(&self, f: &mut fmt::Formatter<'_>, min: u8) -> fmt::Result {
        if self.precedence() < min {
            f.write_str("(")?;
            self.write(f, 0)?;
            return f.write_str(")");
        }
        match self {
            Self::Null => f.write_str("null"),
            Self::Bool(b) => write!(f, "{b}"),
            Self::Int(i) => write!(f, "{i}"),
            Self::Float(x) => f.write_str(&float_text(*x)),
            Self::Str(s) => f.write_str(&quote(s)),
            Self::Var(path) => write!(f, "{path}"),
            Self::Unary { op, operand } => {
                f.write_str(match op {
                    UnaryOp::Not => "!",
                    UnaryOp::Neg => "-",
                    UnaryOp::Empty => "empty ",
                })?;
                // `-5` parses as the literal -5, so the negation of a number
                // literal needs its parentheses to stay a negation.
                if *op == UnaryOp::Neg && matches!(**operand, Self::Int(_) | Self::Float(_)) {
                    f.write_str("(")?;
                    operand.write(f, 0)?;
                    return f.write_str(")");
                }
                operand.write(f, PREC_UNARY)
            }
            Self::Binary { op, left, right } => {
                let p = op.precedence();
                // Comparisons do not chain, so neither side may be one
                // unparenthesised; the others associate to the left.
                let left_min = if p == PREC_CMP { p + 1 } else { p };
                left.write(f, left_min)?;
                write!(f, " {} ", op.symbol())?;
                right.write(f, p + 1)
            }
            Self::In { item, list } => {
                item.write(f, PREC_CMP + 1)?;
                f.write_str(" in [")?;
                for (i, e) in list.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    e.write(f, 0)?;
                }
                f.write_str("]")
            }
        }
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write(f, 0)
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.root)?;
        for step in &self.steps {
            match step {
                Step::Field(name) if is_name(name) => write!(f, ".{name}")?,
                Step::Field(name) => write!(f, "[{}]", quote(name))?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// Whether `c` may start a name.
fn is_name_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

/// Whether `c` may continue a name.
fn is_name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether `s` lexes as a single name token.
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_name_start) && chars.all(is_name_char)
}

/// A float's text that lexes back as a float: `{:?}` is the shortest exact
/// form but may lack a `.` (`1e300`, fine) — only a plain integer form needs `.0`.
fn float_text(x: f64) -> String {
    let s = format!("{x:?}");
    if s.contains(['.', 'e', 'E']) || !x.is_finite() {
        s
    } else {
        format!("{s}.0")
    }
}

/// A double-quoted string literal with the escapes the lexer reads.
fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Every control character is in the BMP, so four digits do.
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
