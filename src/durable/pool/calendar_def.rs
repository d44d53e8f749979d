//! The stored definition of a durable calendar schedule: what every process
//! registering one schedule id must agree on, and how it sits in the item.
//!
//! A calendar schedule is one item under the schedule's id. Its deadline is
//! the oldest fire not yet handled (the grid key is the pair: schedule id,
//! fire instant). Its envelope has the reserved kind [`KIND`], so a build
//! without calendar support (no handler for that kind) defers it to
//! another process rather than running or dead-lettering it. The payload is
//! this record (version 1, integers big-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 1 | record version, `1` |
//! | 1 + k | length `k` and the handler's kind |
//! | 21 | the misfire policy (`misfire.rs`) |
//! | 8 | FNV-1a 64 of the rule's `Debug` text |
//! | 1 + n | length `n` ≤ 200 and the start of that text, for messages |
//! | rest | the payload, as [`Payload::encode`](crate::durable::Payload::encode) wrote it |
//!
//! Invariants:
//!
//! - Two registrations are the same schedule exactly when their sealed
//!   envelopes are equal bytes: same kind, policy, rule text and payload.
//! - The rule itself is code and is never stored: a process runs a fire
//!   only with an [`Entry`] it registered whose envelope equals the stored
//!   one.

use std::fmt;

use super::misfire::Misfire;
use crate::calendar::Schedule;
use crate::durable::store::backend::DurableError;
use crate::durable::store::envelope;

/// The envelope kind of every calendar schedule's item.
pub(crate) const KIND: &str = "schedpool/calendar";

const VERSION: u8 = 1;

/// How much of the rule's `Debug` text is kept for messages.
const EXCERPT: usize = 200;

/// A registration this process holds: the rule, which cannot be stored,
/// and the envelope it stored.
pub(crate) struct Entry {
    pub(crate) rule: Box<dyn Schedule>,
    pub(crate) misfire: Misfire,
    pub(crate) envelope: Vec<u8>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("rule", &self.rule)
            .field("misfire", &self.misfire)
            .finish_non_exhaustive()
    }
}

/// A decoded record, borrowed from the stored bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Definition<'a> {
    pub(crate) kind: &'a str,
    pub(crate) misfire: Misfire,
    rule_hash: u64,
    pub(crate) rule_text: &'a str,
    pub(crate) payload: &'a [u8],
}

/// The stored bytes of a calendar schedule.
///
/// # Errors
///
/// [`DurableError::Config`] for a kind over 255 bytes.
pub(crate) fn seal(
    kind: &str,
    misfire: &Misfire,
    rule: &dyn Schedule,
    payload: &[u8],
) -> Result<Vec<u8>, DurableError> {
    let kind_len = u8::try_from(kind.len()).map_err(|_| {
        DurableError::Config(format!("kind longer than 255 bytes: {kind:?}").into())
    })?;
    let text = format!("{rule:?}");
    let mut cut = text.len().min(EXCERPT);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut record = Vec::with_capacity(40 + kind.len() + cut + payload.len());
    record.push(VERSION);
    record.push(kind_len);
    record.extend_from_slice(kind.as_bytes());
    misfire.encode(&mut record);
    record.extend_from_slice(&fnv1a(text.as_bytes()).to_be_bytes());
    record.push(cut as u8);
    record.extend_from_slice(&text.as_bytes()[..cut]);
    record.extend_from_slice(payload);
    envelope::seal(KIND, None, &record)
}

/// Reads a record (the payload of an envelope of kind [`KIND`]).
///
/// # Errors
///
/// [`DurableError::Format`] for another version or truncated bytes.
pub(crate) fn read(record: &[u8]) -> Result<Definition<'_>, DurableError> {
    let bad = |why: &str| DurableError::Format(format!("calendar record: {why}").into());
    let (&version, rest) = record.split_first().ok_or_else(|| bad("empty"))?;
    if version != VERSION {
        return Err(bad(&format!(
            "version {version}; this build reads {VERSION}"
        )));
    }
    let (kind, rest) = short_str(rest).ok_or_else(|| bad("truncated kind"))?;
    let (misfire, rest) = Misfire::decode(rest).ok_or_else(|| bad("bad misfire policy"))?;
    let (hash, rest) = rest.split_at_checked(8).ok_or_else(|| bad("truncated"))?;
    let (rule_text, payload) = short_str(rest).ok_or_else(|| bad("truncated rule"))?;
    Ok(Definition {
        kind,
        misfire,
        rule_hash: u64::from_be_bytes(hash.try_into().expect("8 bytes")),
        rule_text,
        payload,
    })
}

/// The kind and payload a user knows an item by: the handler's kind and
/// the schedule's value for a calendar schedule, the envelope's otherwise.
pub(crate) fn user_view<'a>(env: &envelope::Envelope<'a>) -> (&'a str, &'a [u8]) {
    if env.kind == KIND {
        read(env.payload).map_or((KIND, env.payload), |d| (d.kind, d.payload))
    } else {
        (env.kind, env.payload)
    }
}

/// What differs between a stored item and the calendar schedule `mine`
/// (both sealed envelopes), for the refusal's message.
pub(crate) fn differences(stored: &[u8], mine: &[u8]) -> String {
    let mine = envelope::open(mine)
        .and_then(|e| read(e.payload))
        .expect("sealed by this build");
    let env = match envelope::open(stored) {
        Ok(env) => env,
        Err(err) => return format!("an unreadable item is stored under it ({err})"),
    };
    if env.kind != KIND {
        return format!(
            "a one-shot or periodic item of kind {:?} is stored under it",
            env.kind
        );
    }
    let old = match read(env.payload) {
        Ok(old) => old,
        Err(err) => return format!("an unreadable calendar schedule is stored under it ({err})"),
    };
    let mut out = Vec::new();
    if old.kind != mine.kind {
        out.push(format!("kind {:?}, here {:?}", old.kind, mine.kind));
    }
    if old.rule_hash != mine.rule_hash {
        out.push(format!(
            "rule `{}`, here `{}`",
            old.rule_text, mine.rule_text
        ));
    }
    if old.misfire != mine.misfire {
        out.push(format!(
            "misfire {:?}, here {:?}",
            old.misfire, mine.misfire
        ));
    }
    if old.payload != mine.payload {
        out.push(format!(
            "a payload of {} bytes, here another of {}",
            old.payload.len(),
            mine.payload.len()
        ));
    }
    format!("it is stored with {}", out.join("; "))
}

/// A length byte and that many bytes of UTF-8.
fn short_str(bytes: &[u8]) -> Option<(&str, &[u8])> {
    let (&len, rest) = bytes.split_first()?;
    let (text, rest) = rest.split_at_checked(usize::from(len))?;
    Some((std::str::from_utf8(text).ok()?, rest))
}

/// FNV-1a, 64 bits: stable across builds and Rust versions, unlike
/// `DefaultHasher`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[derive(Debug)]
    struct Daily {
        hour: u8,
    }

    impl Schedule for Daily {
        fn next_after(&self, after: SystemTime) -> Option<SystemTime> {
            Some(after + std::time::Duration::from_secs(3600 * u64::from(self.hour) + 1))
        }
    }

    #[test]
    fn round_trip_and_equality_by_bytes() {
        let a = seal("report", &Misfire::skip(), &Daily { hour: 2 }, b"p").unwrap();
        let env = envelope::open(&a).unwrap();
        assert_eq!(env.kind, KIND);
        let def = read(env.payload).unwrap();
        assert_eq!((def.kind, def.payload), ("report", &b"p"[..]));
        assert_eq!(def.misfire, Misfire::skip());
        assert_eq!(def.rule_text, "Daily { hour: 2 }");
        assert_eq!(user_view(&env), ("report", &b"p"[..]));
        let same = seal("report", &Misfire::skip(), &Daily { hour: 2 }, b"p").unwrap();
        assert_eq!(a, same);
        let b = seal("report", &Misfire::run_once(), &Daily { hour: 3 }, b"p").unwrap();
        let why = differences(&a, &b);
        assert!(
            why.contains("rule `Daily { hour: 2 }`, here `Daily { hour: 3 }`"),
            "{why}"
        );
        assert!(why.contains("misfire"), "{why}");
        assert!(!why.contains("kind"), "{why}");
        let plain = envelope::seal("report", None, &()).unwrap();
        assert!(differences(&plain, &b).contains("one-shot or periodic"));
    }

    #[test]
    fn truncated_records_are_refused() {
        let a = seal("k", &Misfire::skip(), &Daily { hour: 2 }, b"").unwrap();
        let record = envelope::open(&a).unwrap().payload;
        for cut in 0..record.len() {
            assert!(read(&record[..cut]).is_err(), "cut at {cut}");
        }
        let mut other = record.to_vec();
        other[0] = 2;
        assert!(matches!(read(&other), Err(DurableError::Format(_))));
    }
}
