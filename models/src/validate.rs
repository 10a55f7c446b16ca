//! Range checks used inside `Deserialize` (so errors carry the file position).

use serde::{Deserialize, Deserializer, de::Error};

/// An integer ≥ 1.
pub fn at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = u64::deserialize(d)?;
    if n == 0 {
        return Err(D::Error::custom("expected an integer ≥ 1, found 0"));
    }
    Ok(n)
}

/// `None` or `Some(n)` with n ≥ 1.
pub fn opt_at_least_one<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = Option::<u64>::deserialize(d)?;
    if n == Some(0) {
        return Err(D::Error::custom("expected None or Some(n) with n ≥ 1, found Some(0)"));
    }
    Ok(n)
}

/// A component name: non-empty, `[A-Za-z0-9_-]`, so that `kind.name.param` paths split.
pub fn name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(D::Error::custom(format!(
            "expected a name of letters, digits, '_' or '-', found \"{s}\""
        )));
    }
    Ok(s)
}

/// An optional field written without `Some(...)`: present means `Some`.
pub fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// Writes an optional field the way [`present`] reads it (use with
/// `skip_serializing_if = "Option::is_none"`).
pub fn ser_present<S: serde::Serializer, T: serde::Serialize>(
    v: &Option<T>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match v {
        Some(x) => x.serialize(s),
        None => s.serialize_none(),
    }
}

/// A probability in [0, 1].
pub fn probability<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let x = f64::deserialize(d)?;
    if !(0.0..=1.0).contains(&x) {
        return Err(D::Error::custom(format!("expected a probability in [0, 1], found {x}")));
    }
    Ok(x)
}
