//! Plain-text output: aligned tables, label/value blocks, progress bars.

use time::OffsetDateTime;

/// A table with a header row; columns are as wide as their widest cell.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are blank, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table as lines separated by `\n`, columns two spaces apart and
    /// no trailing spaces.
    pub fn render(&self) -> String {
        let n = self.headers.len();
        let clean = |row: &[String]| -> Vec<String> {
            (0..n)
                .map(|i| row.get(i).map(|c| one_line(c)).unwrap_or_default())
                .collect()
        };
        let lines: Vec<Vec<String>> = std::iter::once(clean(&self.headers))
            .chain(self.rows.iter().map(|r| clean(r)))
            .collect();
        let widths: Vec<usize> = (0..n)
            .map(|i| lines.iter().map(|l| width(&l[i])).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for line in &lines {
            let mut text = String::new();
            for (i, cell) in line.iter().enumerate() {
                if i > 0 {
                    text.push_str("  ");
                }
                text.push_str(cell);
                if i + 1 < n {
                    text.push_str(&" ".repeat(widths[i] - width(cell)));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

/// `label  value` lines with the values aligned; empty values are left out.
pub fn fields(pairs: &[(&str, String)]) -> String {
    let w = pairs
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(l, _)| width(l))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (label, value) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
        out.push_str(label);
        out.push_str(&" ".repeat(w - width(label) + 2));
        out.push_str(&one_line(value));
        out.push('\n');
    }
    out
}

/// `s` cut to `max` characters, ending in `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    let s = one_line(s);
    if width(&s) <= max {
        return s;
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `[████░░░░] done/total`.
pub fn bar(done: usize, total: usize, slots: usize) -> String {
    format!("{} {done}/{total}", gauge(done, total, slots))
}

/// `[████░░░░]`: `done` of `total` in `slots` cells.
pub fn gauge(done: usize, total: usize, slots: usize) -> String {
    let filled = (done.min(total) * slots).checked_div(total).unwrap_or(0);
    format!("[{}{}]", "█".repeat(filled), "░".repeat(slots - filled))
}

/// An amount of money for people: at most four decimals, float noise and
/// trailing zeros dropped (`0.060000000000000005` → `0.06`, `0.015` →
/// `0.015`, `5` → `5.00`); tiny amounts keep two significant digits.
pub fn money(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.0001 {
        return coordinator_core::numbers::human(v);
    }
    let text = format!("{v:.4}");
    let trimmed = text.trim_end_matches('0');
    // Whole cents at least: `5.00`, `0.10`.
    match trimmed.split_once('.') {
        Some((whole, frac)) if frac.len() < 2 => format!("{whole}.{frac:0<2}"),
        Some(_) => trimmed.to_owned(),
        None => text,
    }
}

/// `2025-06-01 12:03:04` (UTC), or `-`.
pub fn datetime(t: Option<OffsetDateTime>) -> String {
    match t {
        Some(t) => {
            let t = t.to_offset(time::UtcOffset::UTC);
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
                t.year(),
                u8::from(t.month()),
                t.day(),
                t.hour(),
                t.minute(),
                t.second()
            )
        }
        None => "-".to_owned(),
    }
}

/// `12:03:04` (UTC), or eight spaces.
pub fn clock(t: Option<OffsetDateTime>) -> String {
    match t {
        Some(t) => {
            let t = t.to_offset(time::UtcOffset::UTC);
            format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
        }
        None => " ".repeat(8),
    }
}

/// `-` for nothing.
pub fn or_dash(s: Option<&str>) -> String {
    match s {
        Some(s) if !s.is_empty() => s.to_owned(),
        _ => "-".to_owned(),
    }
}

fn one_line(s: &str) -> String {
    if s.contains(['\n', '\r', '\t']) {
        s.replace(['\n', '\r', '\t'], " ")
    } else {
        s.to_owned()
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_to_the_widest_cell() {
        let mut t = Table::new(&["ID", "STATUS", "GOAL"]);
        t.row(vec![
            "a1".into(),
            "executing".into(),
            "Write a report".into(),
        ]);
        t.row(vec!["b22222".into(), "done".into(), "".into()]);
        assert_eq!(
            t.render(),
            "ID      STATUS     GOAL\n\
             a1      executing  Write a report\n\
             b22222  done\n"
        );
    }

    #[test]
    fn unicode_newlines_and_ragged_rows() {
        let mut t = Table::new(&["K", "V"]);
        t.row(vec!["é✓".into(), "two\nlines".into()]);
        t.row(vec!["x".into()]);
        t.row(vec!["y".into(), "1".into(), "dropped".into()]);
        assert_eq!(t.render(), "K   V\né✓  two lines\nx\ny   1\n");
        assert!(!t.is_empty());
        assert!(Table::new(&["A"]).is_empty());
        assert_eq!(Table::new(&["A", "B"]).render(), "A  B\n");
    }

    #[test]
    fn fields_skip_empty_values() {
        assert_eq!(
            fields(&[
                ("id", "42".into()),
                ("failure", String::new()),
                ("status", "ok".into())
            ]),
            "id      42\nstatus  ok\n"
        );
    }

    #[test]
    fn truncation_and_bars() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("exactly-10", 10), "exactly-10");
        assert_eq!(truncate("a longer sentence", 8), "a longe…");
        assert_eq!(money(0.015), "0.015");
        assert_eq!(money(0.060000000000000005), "0.06");
        assert_eq!(money(5.0), "5.00");
        assert_eq!(money(1.5), "1.50");
        assert_eq!(money(0.00001234), "0.000012");
        assert_eq!(bar(1, 4, 8), "[██░░░░░░] 1/4");
        assert_eq!(bar(0, 0, 4), "[░░░░] 0/0");
        assert_eq!(bar(9, 4, 4), "[████] 9/4");
    }

    #[test]
    fn times_are_utc() {
        let t = OffsetDateTime::parse(
            "2025-06-01T14:03:04+02:00",
            &time::format_description::well_known::Rfc3339,
        )
        .expect("time");
        assert_eq!(datetime(Some(t)), "2025-06-01 12:03:04");
        assert_eq!(clock(Some(t)), "12:03:04");
        assert_eq!(datetime(None), "-");
        assert_eq!(or_dash(Some("")), "-");
    }
}
