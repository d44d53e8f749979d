//! The dead record: what a buried item stores in front of its envelope, so
//! its error travels with it in every backend without a new key, column or
//! schema version.
//!
//! Format, version 1 (integers big-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 3 | the tag `DE AD 01` (no envelope starts so: its first byte is its version, `1`) |
//! | 2 | length `n` of the error text (at most [`MAX_ERROR_BYTES`]) |
//! | n | the error text, UTF-8 |
//! | rest | the envelope as it was stored before the item died |
//!
//! Invariants:
//!
//! - Only a dead item carries a record, and at most one: `bury` adds it to
//!   an in-flight item (which has none); `requeue` strips it in the store
//!   (the Lua script and the SQL repeat [`split`]'s rule), `put` replaces
//!   the bytes whole, `cancel` and `dead_letters` hand back the envelope
//!   without it.
//! - Bytes without the tag are an envelope as written before records
//!   existed, or by the store's own dead-lettering (an expired last lease,
//!   a corrupt entry): they read as "no error recorded", never as an error.
//! - The text is cut to [`MAX_ERROR_BYTES`] at a character boundary, so a
//!   dead item costs at most that much more than its envelope.
//!
//! A leaf: nothing of the crate is imported here.

/// The most bytes of error text a dead letter keeps; a longer text is cut
/// at a character boundary and ends with `…`.
pub const MAX_ERROR_BYTES: usize = 1024;

/// The tag that opens a dead record.
pub(crate) const TAG: [u8; 3] = [0xDE, 0xAD, 0x01];

/// The tag and the length field.
pub(crate) const HEAD: usize = TAG.len() + 2;

/// `text` cut to [`MAX_ERROR_BYTES`] at a character boundary, with `…`
/// marking the cut.
pub(crate) fn cap(text: &str) -> String {
    if text.len() <= MAX_ERROR_BYTES {
        return text.to_string();
    }
    const MARK: &str = "…";
    let mut end = MAX_ERROR_BYTES - MARK.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &text[..end])
}

/// The record for `error` (capped): the bytes a backend puts in front of
/// the envelope when it buries an item. Empty for `None`.
pub(crate) fn record(error: Option<&str>) -> Vec<u8> {
    let Some(error) = error else {
        return Vec::new();
    };
    let text = cap(error);
    let len = u16::try_from(text.len()).expect("MAX_ERROR_BYTES fits in u16");
    let mut out = Vec::with_capacity(HEAD + text.len());
    out.extend_from_slice(&TAG);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    out
}

/// Splits stored bytes into the recorded error, if any, and the envelope.
/// Bytes that open with the tag but whose length runs past them are not a
/// record: they are returned whole, as the envelope (its reader then
/// reports them as unreadable). The Lua and SQL strips apply this same
/// rule (tag, and the length fits), so all three agree on every input;
/// text that is not UTF-8 (only a foreign writer makes it) reads lossily.
pub(crate) fn split(stored: &[u8]) -> (Option<String>, &[u8]) {
    let Some(rest) = stored.strip_prefix(&TAG) else {
        return (None, stored);
    };
    let Some((len, rest)) = rest.split_first_chunk::<2>() else {
        return (None, stored);
    };
    match rest.split_at_checked(usize::from(u16::from_be_bytes(*len))) {
        Some((text, envelope)) => (Some(String::from_utf8_lossy(text).into_owned()), envelope),
        None => (None, stored),
    }
}

/// The envelope of stored bytes, without a record.
pub(crate) fn envelope(stored: Vec<u8>) -> Vec<u8> {
    match split(&stored) {
        (Some(_), envelope) => envelope.to_vec(),
        (None, _) => stored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_plain_envelopes() {
        let env = [1u8, 0, 0, 42];
        let mut stored = record(Some("card declined"));
        stored.extend_from_slice(&env);
        assert_eq!(
            split(&stored),
            (Some("card declined".to_string()), &env[..])
        );
        assert_eq!(envelope(stored), env);
        assert_eq!(split(&env), (None, &env[..]), "no record: an old entry");
        assert!(record(None).is_empty());
        let mut empty = record(Some(""));
        empty.extend_from_slice(&env);
        assert_eq!(split(&empty), (Some(String::new()), &env[..]));
    }

    #[test]
    fn a_record_that_does_not_fit_is_returned_whole() {
        let short = [0xDE, 0xAD, 0x01, 0x00];
        assert_eq!(split(&short), (None, &short[..]));
        let overlong = [0xDE, 0xAD, 0x01, 0x00, 0x09, b'a'];
        assert_eq!(split(&overlong), (None, &overlong[..]));
        let not_utf8 = [0xDE, 0xAD, 0x01, 0x00, 0x01, 0xFF, 1, 0, 0];
        assert_eq!(
            split(&not_utf8),
            (Some("\u{FFFD}".into()), &[1u8, 0, 0][..])
        );
    }

    #[test]
    fn long_errors_are_cut_at_a_char_boundary() {
        let long = "é".repeat(MAX_ERROR_BYTES);
        let cut = cap(&long);
        assert!(cut.len() <= MAX_ERROR_BYTES, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.len() > MAX_ERROR_BYTES - 8);
        let stored = record(Some(&long));
        assert_eq!(split(&stored).0.as_deref(), Some(cut.as_str()));
        let exact = "x".repeat(MAX_ERROR_BYTES);
        assert_eq!(cap(&exact), exact, "at the cap: kept whole");
    }
}
