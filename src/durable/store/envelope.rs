//! What a durable item stores: the versioned envelope around the user's
//! bytes, the [`Payload`] encoding of user values, and generated ids.
//!
//! Envelope format, version 1 (all integers big-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 1 | format version, `1` |
//! | 1 | length `k` of the kind (0–255) |
//! | k | the kind, UTF-8 (the pool's handler name; empty for a plain queue) |
//! | 1 | repeat tag: 0 none, 1 fixed rate, 2 fixed delay |
//! | 8 | the period in ms, present only when the tag is not 0 |
//! | rest | the payload, as [`Payload::encode`] wrote it |
//!
//! A reader that meets another version refuses the item with
//! [`DurableError::Format`] instead of misreading it.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::backend::{DurableError, Repeat};
use super::error::ErrorDetail;

const VERSION: u8 = 1;

/// A value that can be stored in a durable queue.
///
/// Implemented for `Vec<u8>`, `String`, `u64`, `i64`, `u32` and `()`. For
/// your own types, use the format you already use. With serde, `encode` is
/// `serde_json::to_writer(out, self)` and `decode` is
/// `serde_json::from_slice(bytes).map_err(|e| e.to_string())`. By hand:
///
/// ```
/// use schedpool::durable::Payload;
///
/// #[derive(Debug, PartialEq)]
/// struct Order { id: u64, customer: String }
///
/// impl Payload for Order {
///     fn encode(&self, out: &mut Vec<u8>) {
///         out.extend_from_slice(&self.id.to_be_bytes());
///         out.extend_from_slice(self.customer.as_bytes());
///     }
///     fn decode(bytes: &[u8]) -> Result<Self, String> {
///         let (id, customer) = bytes.split_at_checked(8).ok_or("too short")?;
///         Ok(Order {
///             id: u64::from_be_bytes(id.try_into().unwrap()),
///             customer: String::from_utf8(customer.to_vec()).map_err(|e| e.to_string())?,
///         })
///     }
/// }
///
/// let order = Order { id: 42, customer: "ada".into() };
/// let mut bytes = Vec::new();
/// order.encode(&mut bytes);
/// assert_eq!(Order::decode(&bytes), Ok(order));
/// ```
///
/// Keep old readers able to decode what new writers store: items can wait in
/// the queue across a deploy.
pub trait Payload: Sized {
    /// Appends the value's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads a value back.
    ///
    /// # Errors
    ///
    /// A description of what is wrong with `bytes`.
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

impl Payload for Vec<u8> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self);
    }
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        Ok(bytes.to_vec())
    }
}

impl Payload for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        String::from_utf8(bytes.to_vec()).map_err(|e| e.to_string())
    }
}

impl Payload for () {
    fn encode(&self, _out: &mut Vec<u8>) {}
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        if bytes.is_empty() {
            Ok(())
        } else {
            Err(format!("expected no bytes, found {}", bytes.len()))
        }
    }
}

macro_rules! int_payload {
    ($($t:ty),*) => {$(
        impl Payload for $t {
            fn encode(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_be_bytes());
            }
            fn decode(bytes: &[u8]) -> Result<Self, String> {
                let raw = bytes.try_into().map_err(|_| {
                    format!("expected {} bytes, found {}", std::mem::size_of::<$t>(), bytes.len())
                })?;
                Ok(<$t>::from_be_bytes(raw))
            }
        }
    )*};
}
int_payload!(u64, i64, u32);

/// A decoded envelope: borrowed from the stored bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Envelope<'a> {
    pub(crate) kind: &'a str,
    pub(crate) repeat: Option<Repeat>,
    pub(crate) payload: &'a [u8],
}

/// Builds the stored bytes of an item.
///
/// # Errors
///
/// [`DurableError::Config`] when `kind` is longer than 255 bytes.
pub(crate) fn seal<T: Payload>(
    kind: &str,
    repeat: Option<Repeat>,
    value: &T,
) -> Result<Vec<u8>, DurableError> {
    let kind_len = u8::try_from(kind.len()).map_err(|_| {
        DurableError::Config(format!("kind longer than 255 bytes: {kind:?}").into())
    })?;
    let mut out = Vec::with_capacity(16 + kind.len());
    out.push(VERSION);
    out.push(kind_len);
    out.extend_from_slice(kind.as_bytes());
    match repeat {
        None => out.push(0),
        Some(Repeat::FixedRate(p)) => {
            out.push(1);
            out.extend_from_slice(&super::backend::ceil_ms(p).to_be_bytes());
        }
        Some(Repeat::FixedDelay(p)) => {
            out.push(2);
            out.extend_from_slice(&super::backend::ceil_ms(p).to_be_bytes());
        }
    }
    value.encode(&mut out);
    Ok(out)
}

/// Reads the stored bytes of an item.
///
/// # Errors
///
/// [`DurableError::Format`] for another version or truncated bytes.
pub(crate) fn open(bytes: &[u8]) -> Result<Envelope<'_>, DurableError> {
    let bad = |why: &str| DurableError::Format(format!("envelope: {why}").into());
    let (&version, rest) = bytes.split_first().ok_or_else(|| bad("empty"))?;
    if version != VERSION {
        return Err(bad(&format!(
            "format version {version}; this build reads {VERSION}"
        )));
    }
    let (&kind_len, rest) = rest.split_first().ok_or_else(|| bad("truncated kind"))?;
    let (kind, rest) = rest
        .split_at_checked(usize::from(kind_len))
        .ok_or_else(|| bad("truncated kind"))?;
    let kind = std::str::from_utf8(kind).map_err(|_| bad("kind is not UTF-8"))?;
    let (&tag, rest) = rest.split_first().ok_or_else(|| bad("truncated repeat"))?;
    let (repeat, payload) = if tag == 0 {
        (None, rest)
    } else {
        let (period, payload) = rest
            .split_at_checked(8)
            .ok_or_else(|| bad("truncated period"))?;
        let ms = u64::from_be_bytes(period.try_into().expect("8 bytes"));
        let period = Duration::from_millis(ms);
        match tag {
            1 => (Some(Repeat::FixedRate(period)), payload),
            2 => (Some(Repeat::FixedDelay(period)), payload),
            _ => return Err(bad(&format!("unknown repeat tag {tag}"))),
        }
    };
    Ok(Envelope {
        kind,
        repeat,
        payload,
    })
}

/// Decodes a payload, naming the item on failure; the payload's own error
/// is the source.
pub(crate) fn decode<T: Payload>(id: &str, payload: &[u8]) -> Result<T, DurableError> {
    T::decode(payload).map_err(|why| {
        DurableError::Format(ErrorDetail::with_source(format!("item {id:?}: {why}"), why))
    })
}

/// Makes fixed-width, time-ordered ids: 12 hex digits of Unix ms, 8 of a
/// per-process sequence, 8 of a per-process random tag. Within one process
/// they sort in creation order, so equal deadlines come out FIFO.
pub(crate) struct IdGen {
    tag: u32,
}

impl IdGen {
    pub(crate) fn new() -> Self {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        IdGen {
            tag: h.finish() as u32,
        }
    }

    pub(crate) fn next(&self) -> String {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        // One sequence for the whole process, so the ids of every handle sort
        // in creation order; the ms part never decreases, even if the wall
        // clock steps back.
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let mut seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let ms = {
            static FLOOR: AtomicU64 = AtomicU64::new(0);
            let prev = FLOOR.fetch_max(now_ms, Ordering::Relaxed);
            prev.max(now_ms)
        };
        seq &= 0xffff_ffff;
        format!("{ms:012x}{seq:08x}{:08x}", self.tag)
    }
}

impl fmt::Debug for IdGen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdGen").field("tag", &self.tag).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let sealed = seal(
            "close",
            Some(Repeat::FixedRate(Duration::from_millis(300))),
            &42u64,
        )
        .unwrap();
        let env = open(&sealed).unwrap();
        assert_eq!(env.kind, "close");
        assert_eq!(
            env.repeat,
            Some(Repeat::FixedRate(Duration::from_millis(300)))
        );
        assert_eq!(decode::<u64>("x", env.payload).unwrap(), 42);
        let plain = seal("", None, &"hi".to_string()).unwrap();
        assert_eq!(open(&plain).unwrap().payload, b"hi");
    }

    #[test]
    fn other_versions_and_truncation_are_refused() {
        assert!(matches!(open(&[2, 0, 0]), Err(DurableError::Format(_))));
        assert!(matches!(open(&[]), Err(DurableError::Format(_))));
        assert!(matches!(open(&[1, 5, b'a']), Err(DurableError::Format(_))));
        assert!(matches!(open(&[1, 0, 1, 0]), Err(DurableError::Format(_))));
        assert!(matches!(open(&[1, 0, 9]), Err(DurableError::Format(_))));
        assert!(seal(&"k".repeat(256), None, &()).is_err());
    }

    #[test]
    fn ids_are_fixed_width_and_ordered() {
        let gen = IdGen::new();
        let ids: Vec<String> = (0..1000).map(|_| gen.next()).collect();
        assert!(ids.iter().all(|id| id.len() == 28));
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "ids sort in creation order"
        );
    }
}
