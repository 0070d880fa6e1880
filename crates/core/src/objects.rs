//! Reading a nested struct only from a JSON object: serde also reads a
//! struct from an array of its fields in order (`[null, null]`), which no
//! client means and the API document does not allow.

use serde::{Deserialize, Deserializer, de::DeserializeOwned, de::Error as _};
use serde_json::Value;

/// `deserialize_with` for a struct field: a JSON object, nothing else.
pub fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<T, D::Error> {
    let v = Value::deserialize(d)?;
    if !v.is_object() {
        return Err(D::Error::custom(format!(
            "invalid type: {}, expected a JSON object",
            kind(&v)
        )));
    }
    T::deserialize(v).map_err(D::Error::custom)
}

/// `deserialize_with` for an optional struct field: `null` or an object.
pub fn optional_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    if v.is_null() {
        return Ok(None);
    }
    object(v).map(Some).map_err(D::Error::custom)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
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
        assert!(e.to_string().contains("expected a JSON object"), "{e}");
        assert!(serde_json::from_value::<Outer>(json!({"maybe": [null]})).is_err());
        // Plain serde would take the array.
        assert!(serde_json::from_value::<Inner>(json!([1])).is_ok());
    }
}
