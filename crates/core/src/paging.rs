//! Exact pages of a list: ask the store for one row more than the page
//! holds, and a last page that is exactly full has no next cursor. Every
//! paged list (REST and tools) cuts its pages here.

/// Exact pages: the store is asked for `limit + 1` rows ([`probe`]); when
/// more than `limit` came back there is a next page, whose cursor is the
/// last row kept. A last page that is exactly full has no `next_cursor`.
pub fn split<T, C>(mut rows: Vec<T>, limit: i64, cursor: impl Fn(&T) -> C) -> (Vec<T>, Option<C>) {
    let keep = usize::try_from(limit).unwrap_or(0);
    if rows.len() <= keep {
        return (rows, None);
    }
    rows.truncate(keep);
    let next = rows.last().map(cursor);
    (rows, next)
}

/// How many rows to fetch for a page of `limit`: one more, to know whether
/// another page follows.
pub fn probe(limit: i64) -> i64 {
    limit.saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::{probe, split};

    #[test]
    fn a_full_last_page_has_no_next_cursor() {
        assert_eq!(probe(2), 3);
        assert_eq!(split(vec![1, 2], 2, |r| *r), (vec![1, 2], None));
        assert_eq!(split(vec![1, 2, 3], 2, |r| *r), (vec![1, 2], Some(2)));
        assert_eq!(split(Vec::<i32>::new(), 2, |r| *r), (vec![], None));
    }
}
