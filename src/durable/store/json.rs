//! [`Json<T>`]: any serde type as a durable [`Payload`] (feature `serde`).
//!
//! Encoding, version 1: one tag byte `1`, then the value as JSON written by
//! `serde_json`. A reader refuses any other tag, an empty payload or JSON that
//! does not deserialize into `T` with an error (the queue dead-letters such an
//! item with that reason); it never panics.

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::envelope::Payload;

/// The tag byte of the version-1 JSON encoding.
const JSON_V1: u8 = 1;

/// A serde value stored as a durable payload: tag byte `1`, then JSON.
///
/// ```
/// use schedpool::durable::{Json, Payload};
///
/// let order = Json((42u64, "ada".to_string()));
/// let mut bytes = Vec::new();
/// order.encode(&mut bytes);
/// assert_eq!(bytes[0], 1);
/// assert_eq!(Json::<(u64, String)>::decode(&bytes).unwrap().0, (42, "ada".to_string()));
/// assert!(Json::<(u64, String)>::decode(b"\x02{}").is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

impl<T: Serialize + DeserializeOwned> Payload for Json<T> {
    /// Writes tag `1` and the JSON text.
    ///
    /// # Panics
    ///
    /// Never for ordinary derived types; a `Serialize` impl that itself
    /// fails (for example a map with non-string keys) is a programming
    /// error and panics with serde_json's message.
    fn encode(&self, out: &mut Vec<u8>) {
        out.push(JSON_V1);
        if let Err(e) = serde_json::to_writer(&mut *out, &self.0) {
            panic!("Json payload: the value does not serialize to JSON: {e}");
        }
    }

    /// # Errors
    ///
    /// An empty payload, an unknown tag, or JSON that is not a `T`.
    fn decode(bytes: &[u8]) -> Result<Self, String> {
        match bytes.split_first() {
            None => Err("Json payload: empty (expected a format tag)".to_string()),
            Some((&JSON_V1, json)) => serde_json::from_slice(json)
                .map(Json)
                .map_err(|e| format!("Json payload: {e}")),
            Some((tag, _)) => Err(format!(
                "Json payload: unknown format tag {tag} (expected 1)"
            )),
        }
    }
}
