//! Query strings and form bodies as ordered (name, value) pairs, with
//! repeated names kept (`id=a&id=b`: the dead letters ticked in a list).

/// The fields of one query string or form body.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fields(Vec<(String, String)>);

impl Fields {
    /// Parses `application/x-www-form-urlencoded` text.
    pub(crate) fn parse(text: &[u8]) -> Fields {
        Fields(form_urlencoded::parse(text).into_owned().collect())
    }

    /// The first non-empty value of `name` (trimmed), if any.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.trim())
            .find(|v| !v.is_empty())
    }

    /// Every value of `name`, in order (blank ones left out).
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The fields as they came, for carrying them into a confirmation form.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.0
    }
}

/// `value` percent-encoded for a query string.
pub(crate) fn encode(value: &str) -> String {
    form_urlencoded::byte_serialize(value.as_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_names_and_blanks() {
        let f = Fields::parse(b"id=a&id=%3Cb%3E&kind=&kind=mail&x=+");
        assert_eq!(f.all("id"), ["a", "<b>"]);
        assert_eq!(f.get("kind"), Some("mail"));
        assert_eq!(f.get("x"), None);
        assert_eq!(encode("a b&c"), "a+b%26c");
    }
}
