//! Reading a nested struct only from a JSON object: serde also reads a
//! struct from an array of its fields in order (`[null, null]`), which no
//! client means and the API document does not allow.

use serde::{Deserialize, Deserializer, de::DeserializeOwned, de::Error as _};
use serde_json::{Map, Value};

/// `deserialize_with` for a struct field: a JSON object, nothing else
/// (serde's own refusal: "invalid type: sequence, expected a map").
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    let map = Map::<String, Value>::deserialize(d)?;
    T::deserialize(Value::Object(map)).map_err(D::Error::custom)
}

/// `deserialize_with` for an optional struct field: `null` or an object.
pub fn optional_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<Map<String, Value>>::deserialize(d)?
        .map(|map| T::deserialize(Value::Object(map)).map_err(D::Error::custom))
        .transpose()
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq, Default)]
    struct Inner {
        a: Option<i64>,
    }

    #[derive(Debug, Deserialize)]
    struct Outer {
        #[serde(default, deserialize_with = "super::object")]
        inner: Inner,
        #[serde(default, deserialize_with = "super::optional_object")]
        maybe: Option<Inner>,
    }

    #[test]
    fn reads_objects_and_refuses_arrays() {
        let ok: Outer = serde_json::from_value(json!({"inner": {"a": 1}, "maybe": null})).unwrap();
        assert_eq!(ok.inner, Inner { a: Some(1) });
        assert_eq!(ok.maybe, None);
        let e = serde_json::from_value::<Outer>(json!({"inner": [1]})).unwrap_err();
        assert!(e.to_string().contains("expected a map"), "{e}");
        assert!(serde_json::from_value::<Outer>(json!({"maybe": [null]})).is_err());
        // Plain serde would take the array.
        assert!(serde_json::from_value::<Inner>(json!([1])).is_ok());
    }
}
