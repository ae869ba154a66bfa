//! Durations (`500ms`, `30s`, `2m`, `1h`) and sizes (`64KiB`, `5MB`, `16MiB`):
//! strings with units, so a bare number never silently means milliseconds.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration written with a unit. Held in milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(u64);

/// A size written with a unit. Held in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(u64);

/// The regular expressions the schema publishes; the parsers below accept exactly these.
pub const DURATION_PATTERN: &str = r"^[0-9]+(ms|s|m|h)$";
pub const SIZE_PATTERN: &str = r"^[0-9]+(B|KB|KiB|MB|MiB|GB|GiB)$";

/// Whether `text` has the syntax of a duration (or a size), whatever its magnitude:
/// `99999999999999999999h` is well formed, and out of range.
pub fn well_formed(text: &str, duration: bool) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let units: &[&str] = if duration { &["ms", "s", "m", "h"] } else { &["B", "KB", "KiB", "MB", "MiB", "GB", "GiB"] };
    digits > 0 && units.contains(&&text[digits..])
}

/// The longest duration any timer accepts (2^31 - 1 ms, the common timer limit).
pub const MAX_TIMER: Duration = Duration(2_147_483_647);

fn split_number(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

impl Duration {
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms)
    }

    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1000)
    }

    pub fn as_millis(self) -> u64 {
        self.0
    }

    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.0)
    }

    pub fn parse(text: &str) -> Option<Self> {
        let (n, unit) = split_number(text)?;
        let factor = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            _ => return None,
        };
        n.checked_mul(factor).map(Duration)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        match ms {
            0 => write!(f, "0ms"),
            _ if ms.is_multiple_of(3_600_000) => write!(f, "{}h", ms / 3_600_000),
            _ if ms.is_multiple_of(60_000) => write!(f, "{}m", ms / 60_000),
            _ if ms.is_multiple_of(1_000) => write!(f, "{}s", ms / 1_000),
            _ => write!(f, "{ms}ms"),
        }
    }
}

impl Size {
    pub const fn from_bytes(b: u64) -> Self {
        Size(b)
    }

    pub const fn mib(n: u64) -> Self {
        Size(n * 1024 * 1024)
    }

    pub const fn mb(n: u64) -> Self {
        Size(n * 1_000_000)
    }

    pub fn bytes(self) -> u64 {
        self.0
    }

    pub fn parse(text: &str) -> Option<Self> {
        let (n, unit) = split_number(text)?;
        let factor: u64 = match unit {
            "B" => 1,
            "KB" => 1_000,
            "KiB" => 1 << 10,
            "MB" => 1_000_000,
            "MiB" => 1 << 20,
            "GB" => 1_000_000_000,
            "GiB" => 1 << 30,
            _ => return None,
        };
        n.checked_mul(factor).map(Size)
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        let units: [(u64, &str); 6] =
            [(1 << 30, "GiB"), (1_000_000_000, "GB"), (1 << 20, "MiB"), (1_000_000, "MB"), (1 << 10, "KiB"), (1_000, "KB")];
        for (factor, unit) in units {
            if b != 0 && b.is_multiple_of(factor) {
                return write!(f, "{}{unit}", b / factor);
            }
        }
        write!(f, "{b}B")
    }
}

macro_rules! string_unit {
    ($ty:ident, $name:literal, $pattern:ident, $what:literal, $example:literal) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = Cow::<str>::deserialize(d)?;
                $ty::parse(&text).ok_or_else(|| serde::de::Error::custom(format!("`{text}` is not a {}", $what)))
            }
        }

        impl JsonSchema for $ty {
            fn schema_name() -> Cow<'static, str> {
                $name.into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": concat!("A ", $what, " with a unit, e.g. ", $example),
                })
            }
        }
    };
}

string_unit!(Duration, "Duration", DURATION_PATTERN, "duration", "`500ms`, `30s`, `2m`, `1h`");
string_unit!(Size, "Size", SIZE_PATTERN, "size", "`64KiB`, `5MB`, `16MiB`");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(Duration::parse("500ms"), Some(Duration(500)));
        assert_eq!(Duration::parse("2m"), Some(Duration(120_000)));
        assert_eq!(Duration::parse("1h"), Some(Duration(3_600_000)));
        assert_eq!(Duration::parse("30"), None);
        assert_eq!(Duration::parse("1.5s"), None);
        assert_eq!(Duration::parse("99999999999999999999h"), None);
        assert_eq!(Duration(90_000).to_string(), "90s");
    }

    #[test]
    fn sizes() {
        assert_eq!(Size::parse("64KiB"), Some(Size(65_536)));
        assert_eq!(Size::parse("5MB"), Some(Size(5_000_000)));
        assert_eq!(Size::parse("16MiB"), Some(Size(16 << 20)));
        assert_eq!(Size::parse("5 MB"), None);
        assert_eq!(Size(16 << 20).to_string(), "16MiB");
    }
}
