//! Page sizes: the one `limit` query parameter of every list, with its
//! bounds and default in its type, so each list validates it the same way,
//! answers the same 400, and documents the same bounds in OpenAPI.

use serde::Deserialize;
use utoipa::{
    PartialSchema, ToSchema,
    openapi::{
        RefOr,
        schema::{ObjectBuilder, Schema, Type},
    },
};

use crate::error::ApiError;

/// `limit` of a list: 1 to `MAX`, `DEFAULT` when absent. Declare the field
/// with `#[serde(default)]` and `#[param(inline)]`, and call [`Limit::get`].
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(transparent)]
pub struct Limit<const DEFAULT: i64, const MAX: i64>(Option<i64>);

impl<const DEFAULT: i64, const MAX: i64> Limit<DEFAULT, MAX> {
    /// The page size asked for, or a 400 `invalid_request` naming `limit`.
    pub fn get(self) -> Result<i64, ApiError> {
        let limit = self.0.unwrap_or(DEFAULT);
        if (1..=MAX).contains(&limit) {
            Ok(limit)
        } else {
            Err(ApiError::invalid(
                "limit",
                format!("limit must be between 1 and {MAX}"),
            ))
        }
    }
}

impl<const DEFAULT: i64, const MAX: i64> PartialSchema for Limit<DEFAULT, MAX> {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                utoipa::openapi::KnownFormat::Int64,
            )))
            .minimum(Some(1))
            .maximum(Some(MAX))
            .default(Some(DEFAULT.into()))
            .description(Some(format!(
                "Most items in one page, 1–{MAX} (default {DEFAULT})."
            )))
            .into()
    }
}

impl<const DEFAULT: i64, const MAX: i64> ToSchema for Limit<DEFAULT, MAX> {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Limit;

    fn parse(q: serde_json::Value) -> Limit<50, 500> {
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(default)]
            limit: Limit<50, 500>,
        }
        serde_json::from_value::<Params>(q).expect("parses").limit
    }

    #[test]
    fn absent_is_the_default_and_bounds_are_inclusive() {
        assert_eq!(parse(json!({})).get().ok(), Some(50));
        assert_eq!(parse(json!({ "limit": 1 })).get().ok(), Some(1));
        assert_eq!(parse(json!({ "limit": 500 })).get().ok(), Some(500));
    }

    #[test]
    fn out_of_bounds_is_a_400_naming_limit() {
        for n in [0, 501, -3] {
            let e = parse(json!({ "limit": n }))
                .get()
                .expect_err("out of bounds");
            assert_eq!(e.to_string(), "limit must be between 1 and 500");
            assert!(matches!(e, crate::error::ApiError::BadRequest { .. }));
        }
    }
}
