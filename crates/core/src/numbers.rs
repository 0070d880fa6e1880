//! Numbers in words meant for people (messages, reasons, the board): money
//! and ratios rounded, never `2.0999999999999996`. JSON keeps exact values.

/// `v` rounded for reading: two decimals from 1 up, three significant
/// digits from 0.01 to 1, two below that (at most six decimals), trailing
/// zeros dropped: `2.0999999999999996` → `2.1`, `150.0` → `150`, `0.015`
/// → `0.015`, `0.0035` → `0.0035`, `1234.567` → `1234.57`. Not finite: as
/// Rust prints it.
pub fn human(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    let decimals = if a == 0.0 || a >= 1.0 {
        2
    } else if a >= 0.01 {
        // Three significant digits below 1: 0.015 stays 0.015 (two
        // decimals showed it as 0.01 beside a spend of 0.02).
        (-a.log10()).floor() as usize + 3
    } else {
        // Two significant digits: 0.0035 needs four decimals.
        ((-a.log10()).floor() as usize + 2).min(6)
    };
    let text = format!("{v:.decimals$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    };
    if text == "-0" { "0".to_owned() } else { text }
}

/// The largest budget (or other amount of money) the API takes: beyond
/// it a number is a mistake (`1e308`), not a limit.
pub const MAX_MONEY: f64 = 1e9;

/// Checks an amount of money a person gives: finite, not negative, at most
/// [`MAX_MONEY`]; the error names the field and the bound.
pub fn check_money(field: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && (0.0..=MAX_MONEY).contains(&v) {
        Ok(())
    } else {
        Err(format!(
            "{field} must be a number from 0 to {} (got {v})",
            human(MAX_MONEY)
        ))
    }
}

/// `n` with its noun: `1 task`, `3 tasks`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::{check_money, count, human};

    #[test]
    fn money_is_bounded() {
        assert!(check_money("budget", 0.015).is_ok());
        assert!(check_money("budget", 1e9).is_ok());
        for bad in [1e308, -1.0, f64::NAN, f64::INFINITY, 1e9 + 1.0] {
            let e = check_money("budget", bad).expect_err("refused");
            assert!(
                e.starts_with("budget must be a number from 0 to 1000000000"),
                "{e}"
            );
        }
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1, "task", "tasks"), "1 task");
        assert_eq!(count(0, "task", "tasks"), "0 tasks");
        assert_eq!(count(2, "is", "are"), "2 are");
    }

    #[test]
    fn floats_read_as_people_write_them() {
        assert_eq!(human(2.0999999999999996), "2.1");
        assert_eq!(human(0.1 + 0.2), "0.3");
        assert_eq!(human(150.0), "150");
        assert_eq!(human(1234.567), "1234.57");
        assert_eq!(human(0.0035), "0.0035");
        assert_eq!(human(0.015), "0.015");
        assert_eq!(human(0.060000000000000005), "0.06");
        assert_eq!(human(0.000_123_4), "0.00012");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(-0.0001), "-0.0001");
        assert_eq!(human(-0.001), "-0.001");
        assert_eq!(human(-1e-12), "0");
        assert_eq!(human(f64::INFINITY), "inf");
    }
}
