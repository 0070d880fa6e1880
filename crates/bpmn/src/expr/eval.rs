//! Evaluation of an [`Expr`] against a variables object.

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::{Number, Value};

use super::{BinaryOp, Expr, ExprError, MAX_DEPTH, Path, Step, UnaryOp};

fn error(message: impl Into<String>) -> ExprError {
    ExprError::Eval {
        message: message.into(),
    }
}

pub(super) fn evaluate(expr: &Expr, vars: &Value) -> Result<Value, ExprError> {
    eval(expr, vars, 0).map(Cow::into_owned)
}

/// A JSON type's name as a process author knows it.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value's type and, for scalars, the value itself (strings cut short).
pub(super) fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) if s.chars().count() > 40 => {
            format!(
                "string {}…",
                super::quote(&s.chars().take(40).collect::<String>())
            )
        }
        Value::String(s) => format!("string {}", super::quote(s)),
        Value::Array(a) => format!("array of {} items", a.len()),
        Value::Object(_) => "object".to_owned(),
    }
}

fn eval<'v>(expr: &Expr, vars: &'v Value, depth: usize) -> Result<Cow<'v, Value>, ExprError> {
    // Parsed trees are within the limit already; this guards hand-built ones.
    if depth >= MAX_DEPTH {
        return Err(error(format!(
            "expression nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let sub = |e: &Expr| eval(e, vars, depth + 1);
    Ok(Cow::Owned(match expr {
        Expr::Null => Value::Null,
        Expr::Bool(b) => Value::Bool(*b),
        Expr::Int(i) => Value::from(*i),
        Expr::Float(x) => float(*x)?,
        Expr::Str(s) => Value::String(s.clone()),
        Expr::Var(path) => {
            return resolve(path, vars)?
                .map(Cow::Borrowed)
                .ok_or_else(|| unknown(path));
        }
        Expr::Unary { op, operand } => match op {
            UnaryOp::Not => Value::Bool(!boolean(&*sub(operand)?, "!")?),
            UnaryOp::Neg => {
                let v = sub(operand)?;
                match number(&v) {
                    Some(Num::Int(i)) => Value::from(i.checked_neg().ok_or_else(overflow)?),
                    Some(Num::Float(x)) => float(-x)?,
                    None => {
                        return Err(error(format!("'-' needs a number, got {}", describe(&v))));
                    }
                }
            }
            UnaryOp::Empty => Value::Bool(match optional(operand, vars, depth + 1)? {
                None => true,
                Some(v) => is_empty(&v),
            }),
        },
        Expr::Binary { op, left, right } => match op {
            BinaryOp::And => {
                // Short-circuit: the right side is not read once the left decides.
                Value::Bool(boolean(&*sub(left)?, "&&")? && boolean(&*sub(right)?, "&&")?)
            }
            BinaryOp::Or => {
                Value::Bool(boolean(&*sub(left)?, "||")? || boolean(&*sub(right)?, "||")?)
            }
            BinaryOp::Eq | BinaryOp::Ne => {
                // Against the literal null, a missing variable counts as null.
                let against_null = matches!(**left, Expr::Null) || matches!(**right, Expr::Null);
                let side = |e: &Expr| -> Result<Cow<'v, Value>, ExprError> {
                    if against_null {
                        Ok(optional(e, vars, depth + 1)?.unwrap_or(Cow::Owned(Value::Null)))
                    } else {
                        eval(e, vars, depth + 1)
                    }
                };
                let equal = equals(&*side(left)?, &*side(right)?);
                Value::Bool(equal == (*op == BinaryOp::Eq))
            }
            BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
                let ordering = compare(&*sub(left)?, &*sub(right)?)?;
                Value::Bool(match op {
                    BinaryOp::Lt => ordering == Ordering::Less,
                    BinaryOp::Le => ordering != Ordering::Greater,
                    BinaryOp::Gt => ordering == Ordering::Greater,
                    _ => ordering != Ordering::Less,
                })
            }
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Rem => {
                let (l, r) = (sub(left)?, sub(right)?);
                match (number(&l), number(&r)) {
                    (Some(a), Some(b)) => arithmetic(*op, a, b)?.into_value()?,
                    _ => {
                        return Err(error(format!(
                            "cannot apply '{}' to {} and {}",
                            op.symbol(),
                            kind(&l),
                            kind(&r)
                        )));
                    }
                }
            }
        },
        Expr::In { item, list } => {
            let item = sub(item)?;
            let mut found = false;
            for candidate in list {
                if equals(&item, &*sub(candidate)?) {
                    found = true;
                    break;
                }
            }
            Value::Bool(found)
        }
    }))
}

/// Evaluates `expr`, except that a variable path that does not resolve is
/// `None` rather than an error (for `empty` and comparisons with null).
fn optional<'v>(
    expr: &Expr,
    vars: &'v Value,
    depth: usize,
) -> Result<Option<Cow<'v, Value>>, ExprError> {
    match expr {
        Expr::Var(path) => Ok(resolve(path, vars)?.map(Cow::Borrowed)),
        _ => eval(expr, vars, depth).map(Some),
    }
}

fn unknown(path: &Path) -> ExprError {
    ExprError::UnknownVariable {
        name: path.to_string(),
    }
}

/// Follows a path: `None` if a key is absent, an index is past the end or a
/// step meets null; an error if a step does not fit the value's type.
fn resolve<'v>(path: &Path, vars: &'v Value) -> Result<Option<&'v Value>, ExprError> {
    let mut current = vars.get(&path.root);
    for (n, step) in path.steps.iter().enumerate() {
        let Some(value) = current else {
            return Ok(None);
        };
        current = match (step, value) {
            (_, Value::Null) => None,
            (Step::Field(name), Value::Object(map)) => map.get(name),
            (Step::Index(i), Value::Array(items)) => items.get(*i),
            (Step::Field(name), other) => {
                return Err(error(format!(
                    "cannot read field '{name}' of '{}', which is {}",
                    prefix(path, n),
                    describe(other)
                )));
            }
            (Step::Index(i), other) => {
                return Err(error(format!(
                    "cannot read item [{i}] of '{}', which is {}",
                    prefix(path, n),
                    describe(other)
                )));
            }
        };
    }
    Ok(current)
}

/// The path up to (not including) step `n`, for messages.
fn prefix(path: &Path, n: usize) -> String {
    Path {
        root: path.root.clone(),
        steps: path.steps[..n].to_vec(),
    }
    .to_string()
}

fn boolean(v: &Value, op: &str) -> Result<bool, ExprError> {
    match v {
        Value::Bool(b) => Ok(*b),
        other => Err(error(format!(
            "'{op}' needs true or false, got {}",
            describe(other)
        ))),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Bool(_) | Value::Number(_) => false,
    }
}

/// A JSON number, kept whole when it is one.
#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            // Precision loss past 2^53 is accepted for mixed arithmetic.
            Self::Int(i) => i as f64,
            Self::Float(x) => x,
        }
    }

    fn into_value(self) -> Result<Value, ExprError> {
        match self {
            Self::Int(i) => Ok(Value::from(i)),
            Self::Float(x) => float(x),
        }
    }
}

fn number(v: &Value) -> Option<Num> {
    let Value::Number(n) = v else { return None };
    // Past i64 (a large u64) the value is read as a float.
    n.as_i64()
        .map(Num::Int)
        .or_else(|| n.as_f64().map(Num::Float))
}

fn float(x: f64) -> Result<Value, ExprError> {
    Number::from_f64(x).map(Value::Number).ok_or_else(overflow)
}

fn overflow() -> ExprError {
    error("arithmetic overflow")
}

fn arithmetic(op: BinaryOp, a: Num, b: Num) -> Result<Num, ExprError> {
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let result = match op {
            BinaryOp::Add => x.checked_add(y),
            BinaryOp::Sub => x.checked_sub(y),
            BinaryOp::Mul => x.checked_mul(y),
            BinaryOp::Div if y == 0 => return Err(error("division by zero")),
            // Whole when exact, so `6 / 3 == 2`; `7 / 2` is 3.5, not 3.
            // (`wrapping_rem` because `i64::MIN % -1` overflows.)
            BinaryOp::Div if x.wrapping_rem(y) != 0 => {
                return Ok(Num::Float(x as f64 / y as f64));
            }
            BinaryOp::Div => x.checked_div(y),
            BinaryOp::Rem if y == 0 => return Err(error("division by zero")),
            BinaryOp::Rem => Some(x.wrapping_rem(y)),
            _ => None,
        };
        return result.map(Num::Int).ok_or_else(overflow);
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    let result = match op {
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        BinaryOp::Mul => x * y,
        BinaryOp::Div | BinaryOp::Rem if y == 0.0 => return Err(error("division by zero")),
        BinaryOp::Div => x / y,
        BinaryOp::Rem => x % y,
        _ => return Err(overflow()),
    };
    if result.is_finite() {
        Ok(Num::Float(result))
    } else {
        Err(overflow())
    }
}

fn numbers_cmp(a: Num, b: Num) -> Ordering {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => x.cmp(&y),
        // JSON numbers are finite, so `partial_cmp` always answers.
        _ => a
            .as_f64()
            .partial_cmp(&b.as_f64())
            .unwrap_or(Ordering::Equal),
    }
}

fn compare(a: &Value, b: &Value) -> Result<Ordering, ExprError> {
    match (a, b) {
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        _ => match (number(a), number(b)) {
            (Some(x), Some(y)) => Ok(numbers_cmp(x, y)),
            _ => Err(error(format!(
                "cannot compare {} with {}",
                kind(a),
                kind(b)
            ))),
        },
    }
}

/// Structural equality in which numbers compare by value (`1 == 1.0`).
fn equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(_), Value::Number(_)) => match (number(a), number(b)) {
            (Some(x), Some(y)) => numbers_cmp(x, y) == Ordering::Equal,
            _ => a == b,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equals(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equals(v, w)))
        }
        _ => a == b,
    }
}
