//! A scenario's `import` entry: a configuration file, written as its path alone
//! (`"resilience4j.yml"`) or with options (`(file: "rules.json", hot_param: User,
//! partial: true, format: Sentinel)`).

use super::{Format, HotParam, Options};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// A configuration a scenario imports (resolved relative to the scenario file at load).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename = "Import")]
pub struct ImportEntry {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub format: Option<Format>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_param: Option<HotParam>,
}

impl ImportEntry {
    pub fn options(&self) -> Options {
        Options { format: self.format, partial: self.partial, hot_param: self.hot_param }
    }
}

const FIELDS: &[&str] = &["file", "format", "partial", "hot_param"];

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = ImportEntry;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(
            "a file path (\"resilience4j.yml\") or (file: …, format: …, partial: …, hot_param: …)",
        )
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<ImportEntry, E> {
        Ok(ImportEntry { file: v.into(), format: None, partial: false, hot_param: None })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ImportEntry, A::Error> {
        let mut e =
            ImportEntry { file: String::new(), format: None, partial: false, hot_param: None };
        let mut file = false;
        while let Some(k) = map.next_key::<String>()? {
            match k.as_str() {
                "file" => {
                    e.file = map.next_value()?;
                    file = true;
                }
                "format" => e.format = Some(map.next_value()?),
                "partial" => e.partial = map.next_value()?,
                "hot_param" => e.hot_param = Some(map.next_value()?),
                other => return Err(de::Error::unknown_field(other, FIELDS)),
            }
        }
        if !file {
            return Err(de::Error::missing_field("file"));
        }
        Ok(e)
    }
}

impl<'de> Deserialize<'de> for ImportEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(EntryVisitor)
    }
}
