//! What the safetensors header says that the container's index cannot.

use std::collections::HashSet;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, Visitor};

/// The first name that the JSON header at the start of `file` (a safetensors file, or its
/// first piece) holds twice, if any: safetensors refuses such a file, a JSON reader keeps one of
/// them silently (so the index holds only one). `None` for a header that does not parse.
pub fn repeated_name(file: &[u8]) -> Option<String> {
    struct Repeated(Option<String>);
    impl<'de> Deserialize<'de> for Repeated {
        fn deserialize<D: Deserializer<'de>>(json: D) -> Result<Repeated, D::Error> {
            json.deserialize_map(Repeated(None))
        }
    }
    impl<'de> Visitor<'de> for Repeated {
        type Value = Repeated;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Repeated, M::Error> {
            let mut seen = HashSet::new();
            let mut repeated = None;
            while let Some(name) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                if repeated.is_none() && !seen.insert(name.clone()) {
                    repeated = Some(name);
                }
            }
            Ok(Repeated(repeated))
        }
    }
    let n = usize::try_from(u64::from_le_bytes(file.get(..8)?.try_into().ok()?)).ok()?;
    let json = file.get(8..8usize.checked_add(n)?)?;
    serde_json::from_slice::<Repeated>(json).ok()?.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use enec::checkpoint::safetensors;

    #[test]
    fn repeated_names_are_found() {
        let header = br#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{}}"#;
        let mut file = (header.len() as u64).to_le_bytes().to_vec();
        file.extend_from_slice(header);
        assert_eq!(repeated_name(&file).as_deref(), Some("a"));
        let once = safetensors::write(
            &[("a", "U8", vec![1], &[0]), ("b", "U8", vec![1], &[0])],
            &Default::default(),
        );
        assert_eq!(repeated_name(&once), None);
        assert_eq!(repeated_name(b"short"), None);
    }
}
