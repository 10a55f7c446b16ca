//! Which fields a component's declaration writes: the top-level field names its `Serialize`
//! emits (a field skipped by `skip_serializing_if` is not written), without serializing
//! their values. [`unregistered_fields`] compares them with the kind's registered
//! parameters and its declared scenario-only fields, so a configurable value added to a
//! spec without a `declare_params!` row (or a reason it is not one) fails a test.
//!
//! API boundary: serde's `Serializer` only; knows no component.

use super::Params;
use serde::ser::{self, Impossible, Serialize};

/// Why a field list could not be read: the value is not a struct (a newtype or an enum
/// variant whose fields the lister does not open).
#[derive(Debug)]
pub struct NotAStruct(String);

impl std::fmt::Display for NotAStruct {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for NotAStruct {}
impl ser::Error for NotAStruct {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        NotAStruct(msg.to_string())
    }
}

/// The top-level field names `value` serializes, in order.
pub fn written_fields<T: Serialize>(value: &T) -> Result<Vec<&'static str>, NotAStruct> {
    value.serialize(Lister)
}

struct Lister;
struct Fields(Vec<&'static str>);

impl ser::SerializeStruct for Fields {
    type Ok = Vec<&'static str>;
    type Error = NotAStruct;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        _value: &T,
    ) -> Result<(), NotAStruct> {
        self.0.push(key);
        Ok(())
    }
    fn end(self) -> Result<Self::Ok, NotAStruct> {
        Ok(self.0)
    }
}

macro_rules! refuse {
    ($($f:ident($($t:ty),*)),* $(,)?) => {
        $(fn $f(self $(, _: $t)*) -> Result<Self::Ok, NotAStruct> {
            Err(NotAStruct(concat!("not a struct: ", stringify!($f)).into()))
        })*
    };
}

impl ser::Serializer for Lister {
    type Ok = Vec<&'static str>;
    type Error = NotAStruct;
    type SerializeSeq = Impossible<Self::Ok, NotAStruct>;
    type SerializeTuple = Impossible<Self::Ok, NotAStruct>;
    type SerializeTupleStruct = Impossible<Self::Ok, NotAStruct>;
    type SerializeTupleVariant = Impossible<Self::Ok, NotAStruct>;
    type SerializeMap = Impossible<Self::Ok, NotAStruct>;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Impossible<Self::Ok, NotAStruct>;

    refuse!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<Self::Ok, NotAStruct> {
        value.serialize(self)
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Self::Ok, NotAStruct> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: &T,
    ) -> Result<Self::Ok, NotAStruct> {
        Err(NotAStruct(format!("not a struct: the variant {variant}")))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAStruct> {
        Err(NotAStruct("not a struct: a sequence".into()))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAStruct> {
        Err(NotAStruct("not a struct: a tuple".into()))
    }
    fn serialize_tuple_struct(
        self,
        name: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotAStruct> {
        Err(NotAStruct(format!("not a struct: the tuple struct {name}")))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAStruct> {
        Err(NotAStruct(format!("not a struct: the variant {variant}")))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAStruct> {
        Err(NotAStruct("not a struct: a map".into()))
    }
    fn serialize_struct(self, _: &'static str, n: usize) -> Result<Fields, NotAStruct> {
        Ok(Fields(Vec::with_capacity(n)))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAStruct> {
        Err(NotAStruct(format!("not a struct: the variant {variant}")))
    }
}

/// The fields `c` writes that are neither its name, nor the root of a registered
/// parameter's field path ([`Params::field_of`]: `closed_loop` for `closed_loop.users`), nor
/// one of its kind's declared scenario-only fields ([`Params::SCENARIO_ONLY`]): each as
/// `<kind>.<field>`.
pub fn unregistered_fields<P: Params + Serialize>(c: &P) -> Result<Vec<String>, NotAStruct> {
    let roots: Vec<String> = P::decls()
        .iter()
        .map(|d| {
            let f = P::field_of(d.name);
            let end = f.find(['.', '[']).unwrap_or(f.len());
            f[..end].to_string()
        })
        .collect();
    Ok(written_fields(c)?
        .into_iter()
        .filter(|f| {
            *f != "name"
                && !roots.iter().any(|r| r == f)
                && !P::SCENARIO_ONLY.iter().any(|(s, _)| s == f)
        })
        .map(|f| format!("{}.{f}", P::KIND))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::written_fields;

    #[derive(serde::Serialize)]
    struct Spec {
        name: String,
        a: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        b: Option<u64>,
    }

    /// Written fields in order; a skipped field is not written; a non-struct is refused.
    #[test]
    fn lists_the_written_fields() {
        let s = Spec { name: "x".into(), a: 1, b: None };
        assert_eq!(written_fields(&s).unwrap(), ["name", "a"]);
        let s = Spec { b: Some(2), ..s };
        assert_eq!(written_fields(&s).unwrap(), ["name", "a", "b"]);
        assert!(written_fields(&Some(s)).is_ok(), "Some(struct) opens the struct");
        assert!(written_fields(&3u64).is_err());
        assert!(written_fields(&vec![1u8]).is_err());
    }
}
