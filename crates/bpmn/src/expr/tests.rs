//! Unit tests of `expr`.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn eval_text(text: &str, vars: &Value) -> Result<Value, ExprError> {
    evaluate(&parse(text)?, vars)
}

fn cond(text: &str, vars: &Value) -> Result<bool, ExprError> {
    condition(&parse(text)?, vars)
}

/// The parse error's text (which ends in its offset) and offset.
fn parse_error(text: &str) -> (String, usize) {
    match parse(text) {
        Err(e @ ExprError::Parse { .. }) => (e.to_string(), e.offset().unwrap()),
        other => panic!("{text:?} should not parse, got {other:?}"),
    }
}

fn eval_error(text: &str, vars: &Value) -> String {
    match cond(text, vars) {
        Err(e) => {
            assert_eq!(e.offset(), None, "{text}");
            e.to_string()
        }
        Ok(b) => panic!("{text:?} should fail, got {b}"),
    }
}

fn var(root: &str) -> Expr {
    Expr::Var(Path {
        root: root.to_owned(),
        steps: vec![],
    })
}

fn bin(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary {
        op,
        left: Box::new(left),
        right: Box::new(right),
    }
}

fn un(op: UnaryOp, operand: Expr) -> Expr {
    Expr::Unary {
        op,
        operand: Box::new(operand),
    }
}

fn canonical(text: &str) -> String {
    parse(text).unwrap().to_string()
}

// ---- the MIWG and vendor strings ----

#[test]
fn miwg_conditions() {
    let yes = json!({"approved": true, "clarified": "yes"});
    let no = json!({"approved": false, "clarified": "no"});
    assert!(cond("${approved}", &yes).unwrap());
    assert!(!cond("${approved}", &no).unwrap());
    assert!(!cond("${!approved}", &yes).unwrap());
    assert!(cond("${!approved}", &no).unwrap());
    assert!(cond("${clarified == 'yes'}", &yes).unwrap());
    assert!(!cond("${clarified == 'yes'}", &no).unwrap());
    assert!(!cond("${clarified == 'no'}", &yes).unwrap());
    assert!(cond("${clarified == 'no'}", &no).unwrap());
}

#[test]
fn feel_amount_over_1000() {
    assert!(cond("= amount > 1000", &json!({"amount": 1500})).unwrap());
    assert!(!cond("= amount > 1000", &json!({"amount": 1000})).unwrap());
    assert!(cond("= amount > 1000", &json!({"amount": 1000.5})).unwrap());
}

#[test]
fn juel_forms() {
    let vars = json!({"amount": 1200, "region": "EU", "a": "x", "items": [1], "none": []});
    assert!(cond(r#"${amount > 1000 && region == "EU"}"#, &vars).unwrap());
    assert!(!cond(r#"${amount > 1000 && region == "US"}"#, &vars).unwrap());
    assert!(cond("#{amount > 1000}", &vars).unwrap());
    assert!(cond("${a eq 'x'}", &vars).unwrap());
    assert!(cond("${a ne 'y'}", &vars).unwrap());
    assert!(cond("${amount gt 1000 and amount lt 2000}", &vars).unwrap());
    assert!(cond("${amount ge 1200 and amount le 1200}", &vars).unwrap());
    assert!(cond("${amount lt 0 or not (a eq 'y')}", &vars).unwrap());
    assert!(cond("${not empty items}", &vars).unwrap());
    assert!(cond("${empty none}", &vars).unwrap());
    assert!(cond("${empty missing}", &vars).unwrap());
    // A Camunda 7 multi-instance completionCondition: `/` does not truncate.
    let mi = json!({"nrOfCompletedInstances": 2, "nrOfInstances": 3});
    let completion = "${nrOfCompletedInstances/nrOfInstances >= 0.6}";
    assert!(cond(completion, &mi).unwrap());
    assert!(
        !cond(
            completion,
            &json!({"nrOfCompletedInstances": 1, "nrOfInstances": 2})
        )
        .unwrap()
    );
    assert_eq!(eval_text("${7 div 2}", &vars).unwrap(), json!(3.5));
    assert_eq!(eval_text("${7 mod 2}", &vars).unwrap(), json!(1));
    assert_eq!(
        canonical("${a eq 'x' and not empty items}"),
        r#"a == "x" && !empty items"#
    );
}

#[test]
fn feel_forms() {
    let vars = json!({"approved": true, "status": "done", "x": 2, "items": [{"price": 5}]});
    assert!(cond("=approved", &vars).unwrap());
    assert!(cond(r#"= status = "done""#, &vars).unwrap());
    assert!(cond(r#"= status != "open""#, &vars).unwrap());
    assert!(cond(r#"= approved and status = "done""#, &vars).unwrap());
    assert!(cond("= not(approved) or x = 2", &vars).unwrap());
    assert!(!cond("= not(approved)", &vars).unwrap());
    assert!(cond("= x in [1, 2, 3]", &vars).unwrap());
    assert!(!cond("= x in [1, 3]", &vars).unwrap());
    assert!(!cond("= x in []", &vars).unwrap());
    // FEEL lists count from 1; the AST (and the bare form) from 0.
    assert!(cond("= items[1].price = 5", &vars).unwrap());
    assert_eq!(canonical("= items[1].price = 5"), "items[0].price == 5");
    assert_eq!(
        parse("= status = \"done\"").unwrap(),
        parse("status == \"done\"").unwrap()
    );
}

#[test]
fn bare_forms() {
    let vars = json!({"amount": 1001, "approved": false, "status": "done"});
    assert!(cond("amount > 1000", &vars).unwrap());
    assert!(!cond("approved", &vars).unwrap());
    assert!(cond(r#"status == "done""#, &vars).unwrap());
    assert!(cond("x in [1, 2] || true", &json!({"x": 5})).unwrap());
}

#[test]
fn whitespace_and_line_breaks_anywhere() {
    let vars = json!({"amount": 1500, "order": {"total": 3}});
    assert!(cond("  ${\n  amount\n >\t1000\r\n}  ", &vars).unwrap());
    assert!(cond("\n=\n amount > 1000 \n", &vars).unwrap());
    assert!(cond("order . total\n==\n3", &vars).unwrap());
}

// ---- literals and paths ----

#[test]
fn literals() {
    let none = json!({});
    assert_eq!(eval_text("42", &none).unwrap(), json!(42));
    assert_eq!(eval_text("-42", &none).unwrap(), json!(-42));
    assert_eq!(eval_text("1.5", &none).unwrap(), json!(1.5));
    assert_eq!(eval_text("2e3", &none).unwrap(), json!(2000.0));
    assert_eq!(eval_text("2.5E-1", &none).unwrap(), json!(0.25));
    assert_eq!(eval_text("'single'", &none).unwrap(), json!("single"));
    assert_eq!(eval_text(r#""double""#, &none).unwrap(), json!("double"));
    assert_eq!(
        eval_text(r#""q\"\\\n\r\t\u00e9'""#, &none).unwrap(),
        json!("q\"\\\n\r\té'")
    );
    assert_eq!(eval_text(r"'it\'s'", &none).unwrap(), json!("it's"));
    assert_eq!(eval_text("true", &none).unwrap(), json!(true));
    assert_eq!(eval_text("false", &none).unwrap(), json!(false));
    assert_eq!(eval_text("null", &none).unwrap(), json!(null));
    assert_eq!(parse("-9223372036854775808").unwrap(), Expr::Int(i64::MIN));
    assert_eq!(parse("9223372036854775807").unwrap(), Expr::Int(i64::MAX));
}

#[test]
fn paths() {
    let vars = json!({
        "order": {"total": 250, "lines": [{"sku": "A"}, {"sku": "B"}]},
        "items": [{"price": 3.5}],
        "map": {"weird key": 1, "and": 2},
        "nothing": null,
    });
    assert_eq!(eval_text("order.total", &vars).unwrap(), json!(250));
    assert_eq!(eval_text("items[0].price", &vars).unwrap(), json!(3.5));
    assert_eq!(eval_text("order.lines[1].sku", &vars).unwrap(), json!("B"));
    assert_eq!(eval_text("map['weird key']", &vars).unwrap(), json!(1));
    assert_eq!(eval_text("map.and", &vars).unwrap(), json!(2));
    assert_eq!(canonical("map['weird key']"), r#"map["weird key"]"#);
    assert_eq!(canonical("map[\"plain\"]"), "map.plain");
    assert_eq!(
        eval_text("order.missing", &vars).unwrap_err(),
        ExprError::UnknownVariable {
            name: "order.missing".into()
        }
    );
    assert_eq!(
        eval_text("order.lines[2].sku", &vars)
            .unwrap_err()
            .to_string(),
        "unknown variable 'order.lines[2].sku'"
    );
    assert_eq!(
        eval_text("nothing.field", &vars).unwrap_err().to_string(),
        "unknown variable 'nothing.field'"
    );
    assert_eq!(
        eval_error("order.total.cents == 1", &vars),
        "cannot read field 'cents' of 'order.total', which is number 250"
    );
    assert_eq!(
        eval_error("order[0] == 1", &vars),
        "cannot read item [0] of 'order', which is object"
    );
    // Variables that are not an object hold no variables.
    assert_eq!(
        eval_text("x", &json!(null)).unwrap_err().to_string(),
        "unknown variable 'x'"
    );
}

// ---- semantics ----

#[test]
fn missing_variables() {
    let none = json!({});
    assert_eq!(eval_error("approved", &none), "unknown variable 'approved'");
    assert_eq!(
        eval_error("${!approved}", &none),
        "unknown variable 'approved'"
    );
    assert_eq!(eval_error("x == 'a'", &none), "unknown variable 'x'");
    assert_eq!(eval_error("x > 1", &none), "unknown variable 'x'");
    assert!(cond("x == null", &none).unwrap());
    assert!(cond("null == x.y[3]", &none).unwrap());
    assert!(!cond("x != null", &none).unwrap());
    assert!(cond("empty x", &none).unwrap());
    assert!(cond("empty x.y", &json!({"x": {}})).unwrap());
    // Only against the literal null: a null-valued variable does not excuse.
    assert_eq!(
        eval_error("x == n", &json!({"n": null})),
        "unknown variable 'x'"
    );
    assert!(!cond("x == null", &json!({"x": 0})).unwrap());
    assert!(cond("x == null", &json!({"x": null})).unwrap());
}

#[test]
fn short_circuit() {
    let none = json!({});
    assert!(!cond("false && missing", &none).unwrap());
    assert!(cond("true || missing", &none).unwrap());
    assert!(!cond("x != null && x > 3", &none).unwrap());
    assert!(cond("x != null && x > 3", &json!({"x": 4})).unwrap());
    assert_eq!(
        eval_error("true && missing", &none),
        "unknown variable 'missing'"
    );
}

#[test]
fn no_truthiness() {
    let vars = json!({"n": 1, "s": "yes", "flag": true});
    assert_eq!(
        eval_error("n", &vars),
        "a condition must be true or false, got number 1"
    );
    assert_eq!(
        eval_error("${s}", &vars),
        "a condition must be true or false, got string \"yes\""
    );
    assert_eq!(
        eval_error("null", &vars),
        "a condition must be true or false, got null"
    );
    assert_eq!(
        eval_error("!n", &vars),
        "'!' needs true or false, got number 1"
    );
    assert_eq!(
        eval_error("flag && s", &vars),
        "'&&' needs true or false, got string \"yes\""
    );
    assert_eq!(
        eval_error("s || flag", &vars),
        "'||' needs true or false, got string \"yes\""
    );
}

#[test]
fn comparisons() {
    let vars = json!({"i": 3, "f": 3.0, "s": "abc", "big": 18446744073709551615u64,
                      "list": [1, {"a": 2}], "obj": {"a": [1]}});
    assert!(cond("i == f", &vars).unwrap());
    assert!(cond("i <= f && i >= f && !(i < f) && !(i > f)", &vars).unwrap());
    assert!(cond("1 < 1.5 && 2.5 > 2", &vars).unwrap());
    assert!(cond("s < 'abd' && s > 'ab' && s >= 'abc'", &vars).unwrap());
    assert!(cond("'B' < 'a'", &vars).unwrap()); // by code point
    assert!(cond("big > i", &vars).unwrap());
    assert!(!cond("s == 3", &vars).unwrap());
    assert!(cond("s != 3", &vars).unwrap());
    assert!(!cond("'1' == 1", &vars).unwrap());
    assert!(!cond("true == 1", &vars).unwrap());
    assert!(cond("list == list && obj == obj && list != obj", &vars).unwrap());
    assert!(cond("obj.a[0] in [0, 1.0]", &vars).unwrap());
    assert_eq!(
        eval_error("s < 3", &vars),
        "cannot compare string with number"
    );
    assert_eq!(
        eval_error("null > 3", &vars),
        "cannot compare null with number"
    );
    assert_eq!(
        eval_error("list >= list", &vars),
        "cannot compare array with array"
    );
}

#[test]
fn structural_equality_compares_numbers_by_value() {
    let vars = json!({"a": [1, {"x": 2}], "b": [1.0, {"x": 2.0}], "c": [1, {"x": 2, "y": 3}]});
    assert!(cond("a == b", &vars).unwrap());
    assert!(!cond("a == c", &vars).unwrap());
}

#[test]
fn arithmetic() {
    let vars = json!({"n": 10, "x": 2.5, "s": "a"});
    assert_eq!(eval_text("1 + 2 * 3", &vars).unwrap(), json!(7));
    assert_eq!(eval_text("(1 + 2) * 3", &vars).unwrap(), json!(9));
    assert_eq!(eval_text("10 - 4 - 3", &vars).unwrap(), json!(3));
    assert_eq!(eval_text("n / 2", &vars).unwrap(), json!(5));
    assert_eq!(eval_text("n / 4", &vars).unwrap(), json!(2.5));
    assert_eq!(eval_text("n % 3", &vars).unwrap(), json!(1));
    assert_eq!(eval_text("-n % 3", &vars).unwrap(), json!(-1));
    assert_eq!(eval_text("n * x", &vars).unwrap(), json!(25.0));
    assert_eq!(eval_text("x % 1", &vars).unwrap(), json!(0.5));
    assert_eq!(eval_text("-x", &vars).unwrap(), json!(-2.5));
    assert_eq!(eval_text("- -n", &vars).unwrap(), json!(10));
    assert_eq!(eval_text("2 - -3", &vars).unwrap(), json!(5));
    assert!(cond("n * 2 + 1 > 20 && -n < 0", &vars).unwrap());
    assert_eq!(eval_error("n / 0 > 1", &vars), "division by zero");
    assert_eq!(eval_error("n % 0 > 1", &vars), "division by zero");
    assert_eq!(eval_error("x / 0.0 > 1", &vars), "division by zero");
    assert_eq!(
        eval_error("9223372036854775807 + 1 > 0", &vars),
        "arithmetic overflow"
    );
    assert_eq!(
        eval_error("-(-9223372036854775808) > 0", &vars),
        "arithmetic overflow"
    );
    assert_eq!(
        eval_error("-9223372036854775808 / -1 > 0", &vars),
        "arithmetic overflow"
    );
    assert_eq!(
        eval_text("-9223372036854775808 % -1", &vars).unwrap(),
        json!(0)
    );
    assert_eq!(
        eval_error("1e300 * 1e300 > 0", &vars),
        "arithmetic overflow"
    );
    assert_eq!(
        eval_error("s + 1 > 0", &vars),
        "cannot apply '+' to string and number"
    );
    assert_eq!(
        eval_error("-s > 0", &vars),
        "'-' needs a number, got string \"a\""
    );
}

#[test]
fn empty_operator() {
    let vars = json!({"e": "", "s": "x", "a": [], "o": {}, "z": 0, "f": false, "n": null});
    for (name, empty) in [
        ("e", true),
        ("s", false),
        ("a", true),
        ("o", true),
        ("z", false),
        ("f", false),
        ("n", true),
        ("missing", true),
    ] {
        assert_eq!(
            cond(&format!("empty {name}"), &vars).unwrap(),
            empty,
            "{name}"
        );
    }
    assert!(cond("empty ''", &vars).unwrap());
}

#[test]
fn precedence() {
    assert_eq!(
        parse("a || b && c").unwrap(),
        bin(
            BinaryOp::Or,
            var("a"),
            bin(BinaryOp::And, var("b"), var("c"))
        )
    );
    assert_eq!(
        parse("!a == b").unwrap(),
        bin(BinaryOp::Eq, un(UnaryOp::Not, var("a")), var("b"))
    );
    assert_eq!(
        parse("a + b * c < d").unwrap(),
        bin(
            BinaryOp::Lt,
            bin(
                BinaryOp::Add,
                var("a"),
                bin(BinaryOp::Mul, var("b"), var("c"))
            ),
            var("d")
        )
    );
    assert_eq!(
        parse("-a * b").unwrap(),
        bin(BinaryOp::Mul, un(UnaryOp::Neg, var("a")), var("b"))
    );
    assert_eq!(parse("-5").unwrap(), Expr::Int(-5));
    assert_eq!(parse("-(5)").unwrap(), un(UnaryOp::Neg, Expr::Int(5)));
    assert_eq!(
        parse("a - 5").unwrap(),
        bin(BinaryOp::Sub, var("a"), Expr::Int(5))
    );
}

#[test]
fn canonical_form() {
    assert_eq!(canonical("${not empty items}"), "!empty items");
    assert_eq!(canonical("(a + b) * c"), "(a + b) * c");
    assert_eq!(canonical("a - (b - c)"), "a - (b - c)");
    assert_eq!(canonical("((a - b)) - c"), "a - b - c");
    assert_eq!(canonical("(a == b) == c"), "(a == b) == c");
    assert_eq!(canonical("not(a or b)"), "!(a || b)");
    assert_eq!(canonical("-(5)"), "-(5)");
    assert_eq!(canonical("-(-5)"), "-(-5)");
    assert_eq!(canonical("- x"), "-x");
    assert_eq!(canonical("1.0"), "1.0");
    assert_eq!(canonical("2e3"), "2000.0");
    assert_eq!(canonical("1e300"), "1e300");
    assert_eq!(canonical("'a\"b'"), r#""a\"b""#);
    assert_eq!(canonical("x in [ 1,2 ]"), "x in [1, 2]");
    assert_eq!(canonical("(x in [1]) == true"), "(x in [1]) == true");
}

#[test]
fn variables_in_first_use_order() {
    let e = parse("b > 1 && a.x == b || c[0] in [d, a] && empty e").unwrap();
    assert_eq!(variables(&e), ["b", "a", "c", "d", "e"]);
    assert!(variables(&parse("1 + 2 == 3").unwrap()).is_empty());
}

// ---- parse errors ----

#[test]
fn parse_errors_name_the_offset() {
    let cases = [
        ("${approved)}", "unexpected ')' at 10", 10),
        ("(a + b))", "unexpected ')' at 7", 7),
        ("  ${ a ) }", "unexpected ')' at 7", 7),
        ("amount = 5", "unexpected '=' (use == for equality) at 7", 7),
        ("${x = 1}", "unexpected '=' (use == for equality) at 4", 4),
        ("a & b", "unexpected '&' (use && for and) at 2", 2),
        ("a | b", "unexpected '|' (use || for or) at 2", 2),
        ("'abc", "unterminated string at 0", 0),
        ("x == \"ab\\", "unterminated string at 5", 5),
        (r#""a\qb""#, r"unknown escape '\q' at 2", 2),
        (
            r#""\u12""#,
            r"invalid \u escape (four hex digits, not a surrogate) at 1",
            1,
        ),
        (
            r#""\ud800""#,
            r"invalid \u escape (four hex digits, not a surrogate) at 1",
            1,
        ),
        ("a # b", "unexpected character '#' at 2", 2),
        ("${a", "missing the '}' that closes '${' at 3", 3),
        ("#{a > 1", "missing the '}' that closes '#{' at 7", 7),
        ("${}", "unexpected end of expression at 2", 2),
        ("", "unexpected end of expression at 0", 0),
        ("   ", "unexpected end of expression at 3", 3),
        ("=", "unexpected end of expression at 1", 1),
        ("a +", "unexpected end of expression at 3", 3),
        ("(a", "unexpected end of expression, expected ')' at 2", 2),
        ("x in 1", "unexpected number 1, expected '[' at 5", 5),
        (
            "x in [1, 2",
            "unexpected end of expression, expected ']' at 10",
            10,
        ),
        (
            "a < b < c",
            "unexpected '<' (comparisons do not chain: add parentheses) at 6",
            6,
        ),
        (
            "a == b in [1]",
            "unexpected 'in' (comparisons do not chain: add parentheses) at 7",
            7,
        ),
        ("and", "unexpected 'and' at 0", 0),
        ("a and or", "unexpected 'or' at 6", 6),
        ("empty", "unexpected end of expression at 5", 5),
        ("a b", "unexpected 'b' at 2", 2),
        ("a.", "expected a field name after '.' at 2", 2),
        ("a.1", "expected a field name after '.' at 2", 2),
        (
            "items[x]",
            "expected a list index (a whole number) or a quoted key at 6",
            6,
        ),
        ("= items[0]", "FEEL lists are indexed from 1 at 8", 8),
        ("items[1 + 1]", "unexpected '+', expected ']' at 8", 8),
        ("items[1.5]", "invalid list index 1.5 at 6", 6),
        ("1 2", "unexpected number 2 at 2", 2),
        ("x == 'a' 'b'", "unexpected string \"b\" at 9", 9),
        (
            "99999999999999999999",
            "whole number 99999999999999999999 is out of range (write it as a decimal, e.g. 99999999999999999999.0) at 0",
            0,
        ),
        ("1e400 > 0", "number 1e400 is out of range at 0", 0),
        ("-1e400 > 0", "number -1e400 is out of range at 1", 1),
        ("a ?? b", "unexpected character '?' at 2", 2),
        ("${a} + ${b}", "unexpected character '}' at 3", 3),
        ("==x", "unexpected '=' at 1", 1),
    ];
    for (text, message, offset) in cases {
        let (got, at) = parse_error(text);
        assert_eq!(got, message, "{text:?}");
        assert_eq!(at, offset, "{text:?}");
    }
}

#[test]
fn offsets_count_chars_not_bytes() {
    let (message, at) = parse_error("'é' == ü)");
    assert_eq!((message.as_str(), at), ("unexpected ')' at 8", 8));
}

// ---- limits ----

#[test]
fn nesting_limit() {
    let parens = |n: usize| format!("{}x{}", "(".repeat(n), ")".repeat(n));
    assert!(parse(&parens(MAX_DEPTH)).is_ok());
    assert_eq!(
        parse_error(&parens(MAX_DEPTH + 1)),
        (
            "expression nested deeper than 64 levels at 64".to_owned(),
            64
        )
    );
    // A tree of depth 64 (63 operators over a leaf) is fine, 65 is not.
    assert!(parse(&format!("{}x", "!".repeat(MAX_DEPTH - 1))).is_ok());
    assert_eq!(
        parse_error(&format!("{}x", "!".repeat(MAX_DEPTH))).0,
        "expression nested deeper than 64 levels at 0"
    );
    // Long operator chains are trees too, though parsed by a loop.
    let chain = |n: usize| vec!["a"; n].join("+");
    assert!(parse(&chain(MAX_DEPTH)).is_ok());
    let (message, at) = parse_error(&chain(MAX_DEPTH + 1));
    assert_eq!(
        (message.as_str(), at),
        ("expression nested deeper than 64 levels at 127", 127)
    );
    let lists = format!("{}1{}", "x in [".repeat(100), "]".repeat(100));
    assert!(
        parse_error(&lists)
            .0
            .starts_with("expression nested deeper than 64 levels")
    );
}

#[test]
fn hostile_input_is_refused_without_overflow() {
    for text in [
        "(".repeat(4000),
        "!".repeat(4000),
        "-".repeat(4000),
        "not ".repeat(1000),
        format!("{}1", "- ".repeat(2000)),
        "a+".repeat(2000) + "a",
        "a&&".repeat(1300) + "a",
    ] {
        let err = parse(&text).unwrap_err();
        assert!(err.offset().is_some(), "{err}");
    }
    let long = "a".repeat(MAX_CHARS + 1);
    assert_eq!(
        parse_error(&long),
        (
            "expression longer than 4096 characters at 4096".to_owned(),
            4096
        )
    );
    assert!(parse(&format!("a{}", " ".repeat(MAX_CHARS - 1))).is_ok());
}

#[test]
fn hand_built_deep_trees_do_not_evaluate() {
    let mut e = Expr::Bool(true);
    for _ in 0..MAX_DEPTH {
        e = un(UnaryOp::Not, e);
    }
    assert_eq!(
        condition(&e, &json!({})).unwrap_err().to_string(),
        "expression nested deeper than 64 levels"
    );
}

// ---- properties ----

fn name() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,6}".prop_filter("reserved", |s| !KEYWORDS.contains(&s.as_str()))
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        "[a-z_][a-z0-9_]{0,5}".prop_map(Step::Field),
        any::<String>().prop_map(Step::Field),
        (0usize..1000).prop_map(Step::Index),
    ]
}

fn leaf() -> impl Strategy<Value = Expr> {
    use proptest::num::f64::{NEGATIVE, NORMAL, POSITIVE, SUBNORMAL, ZERO};
    prop_oneof![
        Just(Expr::Null),
        any::<bool>().prop_map(Expr::Bool),
        any::<i64>().prop_map(Expr::Int),
        (-5i64..50).prop_map(Expr::Int),
        (POSITIVE | NEGATIVE | NORMAL | SUBNORMAL | ZERO).prop_map(Expr::Float),
        any::<String>().prop_map(Expr::Str),
        (name(), prop::collection::vec(step(), 0..3))
            .prop_map(|(root, steps)| Expr::Var(Path { root, steps })),
    ]
}

fn unary_op() -> impl Strategy<Value = UnaryOp> {
    prop_oneof![Just(UnaryOp::Not), Just(UnaryOp::Neg), Just(UnaryOp::Empty)]
}

fn binary_op() -> impl Strategy<Value = BinaryOp> {
    prop::sample::select(vec![
        BinaryOp::Or,
        BinaryOp::And,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Rem,
    ])
}

fn ast() -> impl Strategy<Value = Expr> {
    leaf().prop_recursive(8, 64, 4, |inner| {
        prop_oneof![
            (unary_op(), inner.clone()).prop_map(|(op, e)| un(op, e)),
            (binary_op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| bin(op, l, r)),
            (inner.clone(), prop::collection::vec(inner, 0..4)).prop_map(|(item, list)| {
                Expr::In {
                    item: Box::new(item),
                    list,
                }
            }),
        ]
    })
}

fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a", "b.c", "x[0]", "y['k']", "1", "-", "2.5", "1e3", "'s'", "\"t\"", "(", ")", "[", "]",
        ",", ".", "+", "*", "/", "%", "==", "=", "!=", "<", "<=", ">", ">=", "&&", "||", "!",
        "and", "or", "not", "empty", "eq", "in", "true", "false", "null", "${", "}", "=", " ",
        "\n", "\\", "'", "\"", "é",
    ])
}

/// Text made of the language's own tokens, so random input reaches deep
/// into the parser rather than stopping at the first odd character.
fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..12).prop_map(|p| p.concat())
}

/// A valid expression's text with one piece inserted or one char removed.
fn mutated() -> impl Strategy<Value = String> {
    (ast(), any::<prop::sample::Index>(), piece(), any::<bool>()).prop_map(
        |(e, at, piece, insert)| {
            let mut chars: Vec<char> = e.to_string().chars().collect();
            let i = at.index(chars.len() + 1);
            if insert {
                chars.splice(i..i, piece.chars());
            } else if i < chars.len() {
                chars.remove(i);
            }
            chars.into_iter().collect()
        },
    )
}

fn sample_vars() -> Value {
    json!({"a": true, "b": {"c": 3}, "x": [1, "two", null], "y": {"k": "v"}})
}

proptest! {
    #[test]
    fn display_reparses_to_the_same_ast(e in ast()) {
        let text = e.to_string();
        prop_assume!(text.chars().count() <= MAX_CHARS);
        prop_assert_eq!(parse(&text), Ok(e), "{}", text);
    }

    #[test]
    fn parse_never_panics(text in any::<String>()) {
        let _ = parse(&text);
    }

    #[test]
    fn parsed_soup_round_trips_and_evaluates(text in token_soup()) {
        if let Ok(e) = parse(&text) {
            prop_assert_eq!(parse(&e.to_string()), Ok(e.clone()), "{}", text);
            let _ = evaluate(&e, &sample_vars());
            let _ = variables(&e);
        }
    }

    #[test]
    fn mutated_text_parses_or_fails_cleanly(text in mutated()) {
        if let Ok(e) = parse(&text) {
            prop_assert_eq!(parse(&e.to_string()), Ok(e), "{}", text);
        }
    }

    #[test]
    fn evaluate_never_panics(e in ast()) {
        let _ = evaluate(&e, &json!({"a": 1, "b": [2.5, "s"], "c": {"d": null}}));
    }

    #[test]
    fn variables_lists_each_root_once(e in ast()) {
        let names = variables(&e);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        prop_assert_eq!(unique.len(), names.len());
    }
}
