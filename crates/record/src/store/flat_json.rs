//! The one JSON shape a report reads a million times: a flat object of
//! plain names to numbers (a sample's Server-Timing, as the store writes
//! it, and as PostgreSQL's `jsonb` prints it: one space after each `:`
//! and `,`), read without a general parser. Anything else — an escape in
//! a name, other whitespace, a nested value, a number JSON would not
//! write — is
//! `None`, and the caller parses the text with `serde_json` (which also
//! words the error). Numbers are Rust's `f64` parse of the JSON number's
//! text: correctly rounded, as `serde_json` with `float_roundtrip` reads
//! them, so both give the same bits.

use std::borrow::Cow;

/// `{"name":number,…}` as (name, value) pairs in order, names borrowed
/// from `text`; `None` when the text is not exactly that shape (see the
/// module docs).
pub(crate) fn numbers(text: &str) -> Option<Vec<(Cow<'_, str>, f64)>> {
    let b = text.as_bytes();
    if b.first() != Some(&b'{') || b.last() != Some(&b'}') {
        return None;
    }
    let mut out = Vec::with_capacity(8);
    let mut i = 1;
    if b.get(i) == Some(&b'}') {
        return (b.len() == 2).then_some(out);
    }
    loop {
        // A name: plain characters up to the closing quote.
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let start = i + 1;
        let len = b[start..]
            .iter()
            .position(|&c| c == b'"' || c == b'\\' || c < 0x20)?;
        if b[start + len] != b'"' {
            return None;
        }
        let name = text.get(start..start + len)?;
        i = start + len + 1;
        if b.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        if b.get(i) == Some(&b' ') {
            i += 1;
        }
        let end = i + b[i..].iter().position(|&c| c == b',' || c == b'}')?;
        let number = text.get(i..end)?;
        if !json_number(number.as_bytes()) {
            return None;
        }
        out.push((Cow::Borrowed(name), number.parse().ok()?));
        i = end + 1;
        match b[end] {
            b',' => {
                if b.get(i) == Some(&b' ') {
                    i += 1;
                }
            }
            _ => return (i == b.len()).then_some(out),
        }
    }
}

/// The JSON number grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
fn json_number(s: &[u8]) -> bool {
    let digits = |s: &[u8], i: &mut usize| {
        let from = *i;
        while s.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > from
    };
    let mut i = usize::from(s.first() == Some(&b'-'));
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            digits(s, &mut i);
        }
        _ => return false,
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        if !digits(s, &mut i) {
            return false;
        }
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(s, &mut i) {
            return false;
        }
    }
    i == s.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_stored_shape_is_read_and_anything_else_is_left_to_serde() {
        assert_eq!(
            numbers(r#"{"db":166.13645760712393,"total":2303,"q":1e-3}"#),
            Some(vec![
                ("db".into(), 166.13645760712393),
                ("total".into(), 2303.0),
                ("q".into(), 0.001)
            ])
        );
        assert_eq!(numbers("{}"), Some(vec![]));
        // PostgreSQL's jsonb text.
        assert_eq!(
            numbers(r#"{"db": 1.5, "total": 20}"#),
            Some(vec![("db".into(), 1.5), ("total".into(), 20.0)])
        );
        for other in [
            r#"{"a\"b":1}"#,
            r#"{ "a":1}"#,
            r#"{"a":  1}"#,
            r#"{"a":1 }"#,
            r#"{"a":1,}"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":NaN}"#,
            r#"{"a":inf}"#,
            r#"{"a":+1}"#,
            r#"{"a":"1"}"#,
            r#"{"a":{"b":1}}"#,
            r#"{"a":1}x"#,
            r#"{"a":1"#,
            "{",
            "",
            "[1]",
        ] {
            assert_eq!(numbers(other), None, "{other}");
        }
    }

    proptest! {
        /// Whatever serde_json writes for a map of names to finite numbers
        /// reads back here to the same names and the same bits as
        /// serde_json reads it.
        #[test]
        fn agrees_with_serde_json(
            map in proptest::collection::btree_map("[a-z_]{1,12}", any::<f64>().prop_filter("finite", |x| x.is_finite()), 0..10),
        ) {
            let text = serde_json::to_string(&map).unwrap();
            let ours = numbers(&text).expect("the shape the store writes");
            let theirs: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(ours.len(), theirs.len());
            for ((name, v), (k, w)) in ours.iter().zip(&theirs) {
                prop_assert_eq!(name.as_ref(), k.as_str());
                prop_assert_eq!(v.to_bits(), w.as_f64().unwrap().to_bits());
            }
        }
    }
}
