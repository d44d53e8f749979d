//! A payload as people can read it: pretty JSON when the bytes are JSON,
//! text when they are UTF-8, else a hex dump (and the number an 8-byte
//! payload holds, the encoding of `u64`/`i64` payloads), cut to a size cap.
//!
//! Invariant: the result is plain text, never markup: the console escapes
//! it when it renders it (maud escapes every interpolation).

use serde::Serialize;

/// The default cap on the shown text, in bytes.
pub const DEFAULT_CAP: usize = 64 * 1024;

/// How a payload was decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// Valid JSON, shown pretty-printed.
    Json,
    /// Valid UTF-8 that is not JSON.
    Text,
    /// Neither: a hex dump.
    Bytes,
}

/// A payload decoded for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// How it was decoded.
    pub encoding: Encoding,
    /// The text to show (at most the cap, cut at a character boundary).
    pub text: String,
    /// The payload's size in bytes.
    pub size: usize,
    /// The text was cut at the cap.
    pub truncated: bool,
    /// An 8-byte binary payload read as a big-endian unsigned number (how
    /// the library encodes `u64`).
    pub as_u64: Option<u64>,
}

/// Decodes `bytes` for display, the text cut to `cap` bytes.
///
/// # Examples
///
/// ```
/// use schedpool_cli::payload::{show, Encoding};
///
/// let json = show(br#"{"order":42}"#, 1024);
/// assert_eq!(json.encoding, Encoding::Json);
/// assert!(json.text.contains("\"order\": 42"));
///
/// let number = show(&42u64.to_be_bytes(), 1024);
/// assert_eq!((number.encoding, number.as_u64), (Encoding::Bytes, Some(42)));
///
/// let long = show("é".repeat(100).as_bytes(), 11);
/// assert!(long.truncated && long.text.len() <= 11);
/// ```
pub fn show(bytes: &[u8], cap: usize) -> Shown {
    let (encoding, full) = match serde_json::from_slice::<serde_json::Value>(bytes) {
        // A bare number or string is JSON too, but shown as it is stored.
        Ok(value) if value.is_object() || value.is_array() => (
            Encoding::Json,
            serde_json::to_string_pretty(&value).unwrap_or_default(),
        ),
        _ => match std::str::from_utf8(bytes) {
            Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => {
                (Encoding::Text, text.to_string())
            }
            _ => (
                Encoding::Bytes,
                hex_dump(&bytes[..bytes.len().min(cap / 3 + 1)]),
            ),
        },
    };
    let as_u64 = match (encoding, <[u8; 8]>::try_from(bytes)) {
        (Encoding::Bytes, Ok(b)) => Some(u64::from_be_bytes(b)),
        _ => None,
    };
    // A hex dump takes 3 characters a byte: only the bytes that fit are dumped.
    let dumped_all = encoding != Encoding::Bytes || bytes.len() <= cap / 3 + 1;
    let truncated = full.len() > cap || !dumped_all;
    let mut text = full;
    if text.len() > cap {
        let mut end = cap;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    Shown {
        encoding,
        text,
        size: bytes.len(),
        truncated,
        as_u64,
    }
}

/// `00 2a ff ...`, 16 bytes a line.
fn hex_dump(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|line| {
            line.iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}
